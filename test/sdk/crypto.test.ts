import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../helpers/kernel.ts';

/** Digests as a service computes them: through the SDK, in a real sandbox. */
const DIGEST = `import { service, sha256Hex, sha256Base64, fromBase64 } from 'svc/sdk';
export default service({
  async POST(ctx) {
    const { text, base64 } = ctx.payload;
    const data = base64 !== undefined ? fromBase64(base64) : text;
    try {
      return { hex: await sha256Hex(data), b64: await sha256Base64(data) };
    } catch (e) {
      return { error: e.name + ': ' + e.message };
    }
  },
});
`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({
    config: 'channel_rest:\n  - { name: digest, url_path: /digest, service: digest, method: POST, data_format: json, security: none }\n',
    services: { 'digest.ts': DIGEST },
  });
});
afterAll(() => k?.close());

async function digest(payload: Record<string, unknown>): Promise<Record<string, string>> {
  const res = await k.app.inject({ method: 'POST', url: '/digest', payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('sha256Hex / sha256Base64 in a service', () => {
  // FIPS 180-2 appendix B, and the empty message.
  it.each([
    ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
    ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
    ['abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq', '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1'],
  ])('digest %j as the standard says, from text and from bytes', async (message, hex) => {
    const expected = { hex, b64: Buffer.from(hex, 'hex').toString('base64') };
    expect(await digest({ text: message })).toEqual(expected);
    expect(await digest({ base64: Buffer.from(message).toString('base64') })).toEqual(expected);
  });

  it('hash text as UTF-8 and bytes as they are', async () => {
    const bytes = Buffer.from([0xff, 0x00, 0xc3, 0x28]);
    expect(await digest({ text: 'zoë ✓ 😀' })).toEqual({ hex: createHash('sha256').update('zoë ✓ 😀', 'utf8').digest('hex'), b64: createHash('sha256').update('zoë ✓ 😀', 'utf8').digest('base64') });
    expect(await digest({ base64: bytes.toString('base64') })).toEqual({ hex: createHash('sha256').update(bytes).digest('hex'), b64: createHash('sha256').update(bytes).digest('base64') });
  });

  it('throw a TypeError for data that is neither text nor bytes', async () => {
    expect(await digest({ text: 42 })).toEqual({ error: 'TypeError: sha256Hex: data must be a string or a Uint8Array' });
  });
});
