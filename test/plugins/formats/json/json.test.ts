import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

/** The json format (the default) through a channel: what a service receives and how its result is sent. */

const SERVICES: Record<string, string> = {
  'echo.js': `import { service } from 'svc/sdk';
export default service({
  handle: (ctx) => ({ payloadType: ctx.payload === undefined ? 'none' : Array.isArray(ctx.payload) ? 'array' : typeof ctx.payload, payload: ctx.payload, input: ctx.input, raw: ctx.rawBody }),
});`,
  'reply.js': `import { service } from 'svc/sdk';
export default service({
  handle(ctx) {
    switch (ctx.input.kind) {
      case 'string': return 'Zoë says "hi"';
      case 'text': ctx.response.contentType = 'text/csv; charset=utf-8'; return 'a;b\\n1;2\\n';
      case 'number': return 42;
      case 'bytes': return new Uint8Array([0, 1, 0x80, 0xff]);
      case 'pdf': ctx.response.contentType = 'application/pdf'; return new Uint8Array([0x25, 0x50, 0x44, 0x46, 0xff]);
      default: return { ok: true, list: [1, 'two'] };
    }
  },
});`,
  'depth.js': `import { service } from 'svc/sdk';
export default service({
  handle(ctx) {
    let depth = 0;
    for (let v = ctx.payload; v !== null && typeof v === 'object'; v = Array.isArray(v) ? v[0] : Object.values(v)[0]) depth++;
    return { depth };
  },
});`,
};

const CONFIG = `
channel_rest:
  - { name: echo, url_path: /echo, service: echo, security: none, data_format: json }
  - { name: echo.default, url_path: /default, service: echo, security: none }
  - { name: reply, url_path: '/reply/{kind}', service: reply, security: none }
  - { name: deep, url_path: /deep, service: depth, security: none, json: { max_depth: 1000 } }
  - { name: shallow, url_path: /shallow, service: depth, security: none, data_format: json, json: { max_depth: 2 } }
`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES });
  for (const name of Object.keys(SERVICES)) expect(k.kernel.services.errors.get(name.replace(/\.js$/, '')), name).toBeUndefined();
});
afterAll(() => k?.close());

const post = (url: string, body: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  k.app.inject({ method: 'POST', url, payload: body, headers });

function expectError(res: LightMyRequestResponse, status: number, details: RegExp): void {
  expect(res.statusCode).toBe(status);
  const body = res.json() as { result: string; cid: string; details: string };
  expect(body.result).toBe('Error');
  expect(body.cid).toBe(res.headers['x-svc-cid']);
  expect(body.cid).toMatch(/\S/);
  expect(body.details).toMatch(details);
}

describe('json channel: reading', () => {
  it('gives an object as payload and merges its fields into input', async () => {
    const res = await post('/echo?q=1', '{"name":"Zoë","n":2,"nested":{"a":[1,null]}}');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      payloadType: 'object',
      payload: { name: 'Zoë', n: 2, nested: { a: [1, null] } },
      input: { q: '1', name: 'Zoë', n: 2, nested: { a: [1, null] } },
      raw: '{"name":"Zoë","n":2,"nested":{"a":[1,null]}}',
    });
  });

  it('is the default format of a channel', async () => {
    expect((await post('/default', '{"a":1}')).json()).toMatchObject({ payloadType: 'object', input: { a: 1 } });
  });

  it('gives an array as payload without merging it into input', async () => {
    const res = await post('/echo?q=1', '[1,{"a":2}]');
    expect(res.json()).toMatchObject({ payloadType: 'array', payload: [1, { a: 2 }], input: { q: '1' } });
  });

  it('gives scalars as payload', async () => {
    expect((await post('/echo', '42')).json()).toMatchObject({ payloadType: 'number', payload: 42 });
    expect((await post('/echo', '"text"')).json()).toMatchObject({ payloadType: 'string', payload: 'text' });
    expect((await post('/echo', 'true')).json()).toMatchObject({ payloadType: 'boolean', payload: true });
  });

  it('treats an empty body as no payload', async () => {
    const res = await post('/echo?q=1', '');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ payloadType: 'none', input: { q: '1' }, raw: '' });
    expect((await k.app.inject({ method: 'GET', url: '/echo' })).json()).toMatchObject({ payloadType: 'none', input: {} });
  });

  it('parses the body whatever its Content-Type says', async () => {
    expect((await post('/echo', '{"a":1}', { 'content-type': 'text/plain' })).json()).toMatchObject({ payload: { a: 1 } });
  });

  it('answers malformed JSON with 400, the CID and the reason', async () => {
    expectError(await post('/echo', '{"a": '), 400, /^Invalid JSON: .+/);
    expectError(await post('/echo', "{'a': 1}"), 400, /^Invalid JSON: .+/);
    expectError(await post('/echo', '{"a":1} trailing'), 400, /^Invalid JSON: .+/);
  });

  it('refuses __proto__ and constructor.prototype keys (prototype poisoning) with 400', async () => {
    expectError(await post('/echo', '{"__proto__": {"admin": true}}'), 400, /^Invalid JSON: /);
    expectError(await post('/echo', '{"a": {"b": {"__proto__": {"admin": true}}}}'), 400, /^Invalid JSON: /);
    expectError(await post('/echo', '{"constructor": {"prototype": {"admin": true}}}'), 400, /^Invalid JSON: /);
    expectError(await post('/echo', '[{"constructor": {"prototype": {}}}]'), 400, /^Invalid JSON: /);
  });

  it('still accepts a plain "constructor" key that is not a prototype', async () => {
    expect((await post('/echo', '{"constructor": "Ann"}')).json()).toMatchObject({ payload: { constructor: 'Ann' } });
  });

  it('refuses poisoning keys spelled with unicode escapes, decided on the parsed keys', async () => {
    for (const body of [
      String.raw`{"\u005f_proto__": {"admin": true}}`,
      String.raw`{"\u005F\u005Fproto\u005F\u005F": 1}`,
      String.raw`{"a": [{"b": {"__pro\u0074o__": {}}}]}`,
      String.raw`{"constructor": {"\u0070rototype": {"admin": true}}}`,
      String.raw`{"\u0063onstructor": {"prototype": {}}}`,
      String.raw`[1, {"\u0063\u006fnstructor": {"pr\u006ftotype": null}}]`,
    ]) {
      expectError(await post('/echo', body), 400, /^Invalid JSON: the key "(__proto__|constructor\.prototype)" is not allowed/);
    }
  });

  it('accepts the words and escapes where they are not poisoning keys', async () => {
    const res = await post('/echo', String.raw`{"note": "__proto__ and constructor.prototype", "caf\u00e9": "\u005f_proto__", "constructor": {"name": "x"}, "__proto__x": 1}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().payload).toEqual({ note: '__proto__ and constructor.prototype', café: '__proto__', constructor: { name: 'x' }, __proto__x: 1 });
  });
});

describe('json channel: nesting depth', () => {
  const nested = (depth: number, open = '[', close = ']') => open.repeat(depth) + close.repeat(depth);
  const nestedObject = (depth: number) => '{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1);

  it('answers 400 with the CID for 5,000 levels in a 10 KB body (not a 500 from the sandbox)', async () => {
    const body = nested(5000);
    expect(body.length).toBe(10_000);
    expectError(await post('/echo', body), 400, /^Invalid JSON: arrays and objects nested deeper than 100 levels$/);
    expectError(await post('/echo', nestedObject(5000)), 400, /nested deeper than 100 levels/);
  });

  it('accepts exactly max_depth levels (100 by default), refuses one more', async () => {
    expect((await post('/default', nested(100))).statusCode).toBe(200);
    expect((await post('/default', nestedObject(100))).statusCode).toBe(200);
    expectError(await post('/default', nested(101)), 400, /nested deeper than 100 levels/);
    expectError(await post('/default', nestedObject(101)), 400, /nested deeper than 100 levels/);
  });

  it('counts only brackets outside strings', async () => {
    const res = await post('/shallow', JSON.stringify({ a: ['[[[{{{', '\\"[[', '"]]]]'], b: '{'.repeat(500) }));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ depth: 2 });
    expectError(await post('/shallow', '{"a": [["x"]]}'), 400, /nested deeper than 2 levels/);
  });

  it('follows the channel setting json.max_depth', async () => {
    const res = await post('/deep', nested(1000));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ depth: 1000 });
    expect((await post('/deep', nestedObject(1000))).json()).toEqual({ depth: 1000 });
    expectError(await post('/deep', nested(1001)), 400, /nested deeper than 1000 levels/);
  });
});

describe('json channel: writing', () => {
  const get = (kind: string) => k.app.inject({ method: 'GET', url: `/reply/${kind}` });

  it('sends objects as JSON', async () => {
    const res = await get('object');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toBe('{"ok":true,"list":[1,"two"]}');
  });

  it('JSON-encodes a string when the service set no content type', async () => {
    const res = await get('string');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toBe('"Zoë says \\"hi\\""');
    expect(res.json()).toBe('Zoë says "hi"');
  });

  it('sends a string as it is when the service set the content type', async () => {
    const res = await get('text');
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.body).toBe('a;b\n1;2\n');
  });

  it('sends a number as JSON', async () => {
    const res = await get('number');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toBe('42');
  });

  it('passes bytes through untouched', async () => {
    expect([...(await get('bytes')).rawPayload]).toEqual([0, 1, 0x80, 0xff]);
    const pdf = await get('pdf');
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect([...pdf.rawPayload]).toEqual([0x25, 0x50, 0x44, 0x46, 0xff]);
  });
});
