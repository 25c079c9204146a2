import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isLocalHostCall, runLocalHostCall } from '../../../kernel/sandbox/local-calls.ts';

const hex = createHmac('sha256', 'key').update('body').digest('hex');
const b64 = createHmac('sha256', 'key').update('body').digest('base64');
const verify = (signature: string, encoding = 'hex') => runLocalHostCall('crypto.verifyHmac', JSON.stringify({ key: 'key', data: { text: 'body' }, encoding, signature }));

describe('sandbox-local host calls', () => {
  it('computes HMAC-SHA256 of text and of bytes', () => {
    expect(runLocalHostCall('crypto.hmac', JSON.stringify({ key: 'key', data: { text: 'body' }, encoding: 'hex' }))).toEqual({ ok: true, value: hex });
    expect(runLocalHostCall('crypto.hmac', JSON.stringify({ key: 'key', data: { bytes: [...Buffer.from('body')] }, encoding: 'base64' }))).toEqual({ ok: true, value: b64 });
  });

  it('takes bytes as base64, as the SDK sends them', () => {
    expect(runLocalHostCall('crypto.hmac', JSON.stringify({ key: 'key', data: { base64: Buffer.from('body').toString('base64') }, encoding: 'hex' }))).toEqual({ ok: true, value: hex });
  });

  it('verifies only the canonical signature', () => {
    expect(verify(hex)).toEqual({ ok: true, value: true });
    expect(verify(hex.toUpperCase())).toEqual({ ok: true, value: true });
    expect(verify(b64, 'base64')).toEqual({ ok: true, value: true });
    expect(verify(hex + 'zz')).toEqual({ ok: true, value: false });
    expect(verify(hex.slice(0, 62))).toEqual({ ok: true, value: false });
    expect(verify('0'.repeat(64))).toEqual({ ok: true, value: false });
    expect(verify(b64 + '!', 'base64')).toEqual({ ok: true, value: false });
  });

  // FIPS 180-2 appendix B, and the empty message.
  it.each([
    ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
    ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
    ['abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq', '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1'],
  ])('digests %j with SHA-256, as hex and base64, from text or bytes', (message, expected) => {
    const digest = (data: unknown, encoding: string) => runLocalHostCall('crypto.digest', JSON.stringify({ algorithm: 'sha256', data, encoding }));
    expect(digest({ text: message }, 'hex')).toEqual({ ok: true, value: expected });
    expect(digest({ base64: Buffer.from(message).toString('base64') }, 'base64')).toEqual({ ok: true, value: Buffer.from(expected, 'hex').toString('base64') });
  });

  it('digests a million times "a" (FIPS 180-2) and UTF-8 text as its bytes', () => {
    const digest = (text: string) => runLocalHostCall('crypto.digest', JSON.stringify({ algorithm: 'sha256', data: { text }, encoding: 'hex' }));
    expect(digest('a'.repeat(1_000_000))).toEqual({ ok: true, value: 'cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0' });
    expect(digest('zoë ✓')).toEqual({ ok: true, value: createHash('sha256').update('zoë ✓', 'utf8').digest('hex') });
  });

  it('digests only with the algorithms it names', () => {
    expect(runLocalHostCall('crypto.digest', JSON.stringify({ algorithm: 'md5', data: { text: 'x' }, encoding: 'hex' })).ok).toBe(false);
  });

  it('checks arguments on the host and answers with an error envelope', () => {
    const reply = runLocalHostCall('crypto.hmac', JSON.stringify({ key: 1, data: { text: 'x' }, encoding: 'hex' }));
    expect(reply.ok).toBe(false);
    expect(runLocalHostCall('crypto.hmac', 'not json').ok).toBe(false);
    expect(isLocalHostCall('pubsub.publish')).toBe(false);
    // Named secrets live in the kernel process: their calls are never answered here.
    expect(isLocalHostCall('secrets.hmac')).toBe(false);
    expect(isLocalHostCall('secrets.verifyHmac')).toBe(false);
  });

  // The checks are hand-written (no zod in the sandbox process): the shapes signedDataSchema and the strict objects accepted.
  it.each([
    ['an extra key', { key: 'k', data: { text: 'x' }, encoding: 'hex', extra: 1 }],
    ['a missing key', { data: { text: 'x' }, encoding: 'hex' }],
    ['a key that is not text', { key: ['k'], data: { text: 'x' }, encoding: 'hex' }],
    ['an unknown encoding', { key: 'k', data: { text: 'x' }, encoding: 'utf8' }],
    ['data with two forms', { key: 'k', data: { text: 'x', base64: 'eA==' }, encoding: 'hex' }],
    ['data with an unknown form', { key: 'k', data: { string: 'x' }, encoding: 'hex' }],
    ['data as a bare string', { key: 'k', data: 'x', encoding: 'hex' }],
    ['bytes over 255', { key: 'k', data: { bytes: [1, 256] }, encoding: 'hex' }],
    ['bytes that are not integers', { key: 'k', data: { bytes: [1.5] }, encoding: 'hex' }],
    ['bytes given as text', { key: 'k', data: { bytes: ['1'] }, encoding: 'hex' }],
    ['a __proto__ key', JSON.parse('{"key":"k","data":{"text":"x"},"encoding":"hex","__proto__":{}}')],
    ['an array', [1, 2]],
  ])('refuses %s with an invalid-arguments envelope', (_what, args) => {
    const reply = runLocalHostCall('crypto.hmac', JSON.stringify(args));
    expect(reply).toMatchObject({ ok: false, error: { status: 500, message: expect.stringMatching(/^invalid arguments for crypto\.hmac: /) } });
  });

  it('refuses a signature over 1024 characters and data over 64 MiB', () => {
    expect(verify('a'.repeat(1025))).toMatchObject({ ok: false, error: { message: expect.stringMatching(/signature must be a string of at most 1024/) } });
    const big = runLocalHostCall('crypto.digest', JSON.stringify({ algorithm: 'sha256', data: { text: 'a'.repeat(64 * 1024 * 1024 + 1) }, encoding: 'hex' }));
    expect(big).toMatchObject({ ok: false, error: { message: expect.stringMatching(/larger than 67108864 bytes/) } });
  });
});
