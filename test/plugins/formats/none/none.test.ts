import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

/** The none format through a channel: the body reaches the service uninterpreted, byte for byte. */

const SERVICES: Record<string, string> = {
  'raw.js': `import { service, toBase64 } from 'svc/sdk';
export default service({
  handle: (ctx) => ({ payloadType: typeof ctx.payload, input: ctx.input, raw: ctx.rawBody, bytes: toBase64(ctx.rawBytes()) }),
});`,
  'mirror.js': `import { service } from 'svc/sdk';
export default service({
  handle(ctx) {
    ctx.response.contentType = 'application/octet-stream';
    return ctx.rawBytes();
  },
});`,
  'reply.js': `import { service } from 'svc/sdk';
export default service({
  handle(ctx) {
    switch (ctx.input.kind) {
      case 'string': return 'plain Zoë';
      case 'csv': ctx.response.contentType = 'text/csv'; return 'a;b\\n';
      case 'bytes': return new Uint8Array([0xff, 0x00, 0xfe]);
      default: return { ok: true };
    }
  },
});`,
};

const CONFIG = `
channel_rest:
  - { name: raw, url_path: /raw, service: raw, security: none, data_format: none }
  - { name: mirror, url_path: /mirror, service: mirror, security: none, data_format: none }
  - { name: small, url_path: /small, service: raw, security: none, data_format: none, body_limit: 16 }
  - { name: reply, url_path: '/reply/{kind}', service: reply, security: none, data_format: none }
`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES });
  for (const name of Object.keys(SERVICES)) expect(k.kernel.services.errors.get(name.replace(/\.js$/, '')), name).toBeUndefined();
});
afterAll(() => k?.close());

const post = (url: string, body: string | Buffer, headers: Record<string, string> = {}) => k.app.inject({ method: 'POST', url, payload: body, headers });

function expectError(res: LightMyRequestResponse, status: number, details: RegExp): void {
  expect(res.statusCode).toBe(status);
  const body = res.json() as { result: string; cid: string; details: string };
  expect(body.result).toBe('Error');
  expect(body.cid).toBe(res.headers['x-svc-cid']);
  expect(body.cid).toMatch(/\S/);
  expect(body.details).toMatch(details);
}

describe('none channel: reading', () => {
  it('does not interpret the body: a JSON body is no payload and no input', async () => {
    const res = await post('/raw?q=1', '{"a":1}', { 'content-type': 'application/json' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ payloadType: 'undefined', input: { q: '1' }, raw: '{"a":1}', bytes: Buffer.from('{"a":1}').toString('base64') });
  });

  it('accepts what json would refuse', async () => {
    const res = await post('/raw', '{"__proto__": {broken', { 'content-type': 'application/json' });
    expect(res.statusCode).toBe(200);
    expect(res.json().raw).toBe('{"__proto__": {broken');
  });

  it('gives UTF-8 text as rawBody and the same bytes from rawBytes()', async () => {
    const text = 'Zoë;日本語;😀\r\n';
    const res = await post('/raw', text, { 'content-type': 'text/plain; charset=utf-8' });
    expect(res.json().raw).toBe(text);
    expect(Buffer.from(res.json().bytes, 'base64').equals(Buffer.from(text, 'utf8'))).toBe(true);
  });

  it('gives bytes that are not UTF-8 exactly through rawBytes() (rawBody is then empty)', async () => {
    const bytes = Buffer.from([0xff, 0x00, 0xc3, 0x28, 0xe9, 0x0d, 0x0a, 0x80]);
    const res = await post('/raw', bytes, { 'content-type': 'application/octet-stream' });
    expect(res.json()).toMatchObject({ raw: '' });
    expect(Buffer.from(res.json().bytes, 'base64').equals(bytes)).toBe(true);
  });

  it('hands every byte value back unchanged', async () => {
    const bytes = Buffer.alloc(256 * 8);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 37) & 0xff;
    const res = await post('/mirror', bytes);
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(bytes)).toBe(true);
  });

  it('treats an empty body as no body', async () => {
    expect((await post('/raw', '')).json()).toEqual({ payloadType: 'undefined', input: {}, raw: '', bytes: '' });
  });

  it('applies the channel body limit: 413 with the CID past it', async () => {
    expect((await post('/small', 'x'.repeat(16))).statusCode).toBe(200);
    expectError(await post('/small', 'x'.repeat(17)), 413, /16 bytes/);
    expectError(await post('/small', Buffer.alloc(100_000, 0xff)), 413, /16 bytes/);
  });
});

describe('none channel: writing', () => {
  const get = (kind: string) => k.app.inject({ method: 'GET', url: `/reply/${kind}` });

  it('sends a string as text/plain', async () => {
    const res = await get('string');
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toBe('plain Zoë');
  });

  it('uses the content type the service set', async () => {
    const res = await get('csv');
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    expect(res.body).toBe('a;b\n');
  });

  it('sends bytes as they are and other values as JSON', async () => {
    expect([...(await get('bytes')).rawPayload]).toEqual([0xff, 0x00, 0xfe]);
    const obj = await get('object');
    expect(obj.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(obj.json()).toEqual({ ok: true });
  });
});
