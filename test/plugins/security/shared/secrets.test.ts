import { describe, expect, it } from 'vitest';
import {
  hashSecret,
  isScryptHash,
  KeyedDigest,
  parseScryptHash,
  randomSecret,
  SCRYPT_PARAMS,
  verifySecret,
} from '../../../../plugins/security/shared/secrets.ts';

describe('scrypt secret hashes', () => {
  it('verifies the secret it hashed and nothing else', async () => {
    const stored = await hashSecret('pa:ss wörd');
    expect(stored).toMatch(/^scrypt\$15\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(stored).not.toContain('pa:ss');
    expect(await verifySecret('pa:ss wörd', stored)).toBe(true);
    expect(await verifySecret('pa:ss wörd ', stored)).toBe(false);
    expect(await verifySecret('', stored)).toBe(false);
    expect(await verifySecret('x'.repeat(5000), stored)).toBe(false);
  });

  it('salts every hash', async () => {
    const [a, b] = await Promise.all([hashSecret('same'), hashSecret('same')]);
    expect(a).not.toBe(b);
  });

  it('keeps the cost parameters in the hash, so older costs still verify', async () => {
    const cheap = await hashSecret('s3cret', { log2N: 12, r: 8, p: 1 });
    expect(parseScryptHash(cheap)).toMatchObject({ log2N: 12, r: 8, p: 1 });
    expect(await verifySecret('s3cret', cheap)).toBe(true);
    expect(SCRYPT_PARAMS.log2N).toBeGreaterThanOrEqual(14);
  });

  it('refuses malformed hashes and costs out of bounds (a memory bomb from outside)', async () => {
    const good = await hashSecret('x', { log2N: 10, r: 8, p: 1 });
    const parts = good.split('$');
    const withCost = (n: string) => [parts[0], n, ...parts.slice(2)].join('$');
    expect(isScryptHash(good)).toBe(true);
    expect(isScryptHash(withCost('30'))).toBe(false);
    expect(isScryptHash(withCost('9'))).toBe(false);
    expect(isScryptHash('plaintext')).toBe(false);
    expect(isScryptHash(`argon2$${parts.slice(1).join('$')}`)).toBe(false);
    expect(isScryptHash(parts.slice(0, 5).join('$'))).toBe(false);
    expect(await verifySecret('x', withCost('30'))).toBe(false);
  });

  it('generates random secrets that are header- and shell-safe', () => {
    const a = randomSecret();
    expect(a).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(randomSecret()).not.toBe(a);
  });
});

describe('KeyedDigest', () => {
  it('is stable within one instance and differs between instances (per-process key)', () => {
    const one = new KeyedDigest();
    const two = new KeyedDigest();
    expect(one.text('abc')).toBe(one.text('abc'));
    expect(one.text('abc')).not.toBe(one.text('abd'));
    expect(one.text('abc')).not.toBe(two.text('abc'));
    expect(one.bytes('a').length).toBe(32);
    expect(one.bytes('a'.repeat(10_000)).length).toBe(32);
  });
});
