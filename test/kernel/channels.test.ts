import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../helpers/kernel.ts';

const echo = `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => ({ input: ctx.input, method: ctx.method, channel: ctx.channel, cid: ctx.cid, sig: ctx.env.HTTP_X_HOOK_SIGNATURE, raw: ctx.rawBody, header: ctx.headers['x-custom'] }) });`;

const verbs = `import { service } from 'svc/sdk';
export default service({
  GET: () => ({ verb: 'get' }),
  POST: (ctx) => { ctx.response.status = 201; ctx.response.headers['Location'] = '/things/9'; return { verb: 'post' }; },
  DELETE: (ctx) => { ctx.response.status = 204; return { ignored: true }; },
  HEAD: (ctx) => { ctx.response.headers['X-Count'] = '3'; return { ignored: true }; },
  OPTIONS: (ctx) => { ctx.response.headers['Allow'] = 'GET, POST, DELETE, HEAD, OPTIONS'; ctx.response.status = 204; },
  handle: () => ({ verb: 'generic (never used)' }),
});`;

const typed = `import { service, t } from 'svc/sdk';
export default service({
  input: { name: t.string(), age: t.integer(), vip: t.boolean({ default: false }), note: t.string({ optional: true }), tags: t.array({ default: [] }) },
  handle: (ctx) => ctx.input,
});`;

const raises = `import { service, BadRequest, Unauthorized, NotFound, Conflict, PayloadTooLarge, ServiceUnavailable, BadGateway, GatewayTimeout, Forbidden } from 'svc/sdk';
const errors = { BadRequest, Unauthorized, NotFound, Conflict, PayloadTooLarge, ServiceUnavailable, BadGateway, GatewayTimeout, Forbidden };
export default service({ handle(ctx) {
  const kind = String(ctx.input.kind);
  if (kind === 'custom') { ctx.response.status = 418; return { mine: true }; }
  if (kind === 'plain') throw new Error('secret internals');
  if (kind === 'string') throw 'a string';
  if (kind === 'badheader') { ctx.response.headers['bad\\nname'] = 'x'; return {}; }
  if (kind === 'bytes') { ctx.response.contentType = 'application/octet-stream'; return new Uint8Array([0, 1, 2, 255]); }
  if (kind === 'text') { ctx.response.contentType = 'text/plain'; return 'plain text'; }
  throw new errors[kind]('reason for ' + kind);
} });`;

const config = `
channel_rest:
  - { name: echo, url_path: '/echo/{a}/{b}', service: echo, security: none }
  - { name: echo.qs-path, url_path: '/qp/{a}', service: echo, security: none, url_params_pri: qs_over_path }
  - { name: echo.path-qs, url_path: '/pq/{a}', service: echo, security: none, url_params_pri: path_over_qs }
  - { name: echo.url-msg, url_path: '/um/{a}', service: echo, security: none, params_pri: url_over_msg }
  - { name: echo.msg-url, url_path: '/mu/{a}', service: echo, security: none, params_pri: msg_over_url }
  - { name: echo.get-only, url_path: /get-only, service: echo, security: none, method: GET }
  - { name: echo.raw, url_path: /raw, service: echo, security: none, data_format: none }
  - { name: verbs, url_path: '/things/{id}', service: verbs, security: none }
  - { name: typed, url_path: /typed, service: typed, security: none }
  - { name: typed.q, url_path: '/typed/{age}', service: typed, security: none }
  - { name: raises, url_path: '/raise/{kind}', service: raises, security: none }
  - { name: missing, url_path: /missing, service: nosuch, security: none }
  - { name: small, url_path: /small, service: echo, security: none, body_limit: 16 }
`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config, services: { 'echo.js': echo, 'verbs.ts': verbs, 'typed.ts': typed, 'raises.ts': raises } });
});
afterAll(() => k?.close());

const call = (method: string, url: string, payload?: unknown, headers?: Record<string, string>) =>
  k.app.inject({ method: method as 'GET', url, payload: payload as string, headers });

describe('routing and input (spec A.1–A.4, A.13, A.14)', () => {
  it('captures path parameters and query string into input, with the CID in header and service', async () => {
    const res = await call('GET', '/echo/1/two?c=3');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.input).toEqual({ a: '1', b: 'two', c: '3' });
    expect(body.channel).toBe('echo');
    expect(body.cid).toBe(res.headers['x-svc-cid']);
  });

  it('takes the same names from a JSON payload', async () => {
    const res = await call('POST', '/echo/1/2', { c: 3, d: [1] });
    expect(res.json().input).toEqual({ a: '1', b: '2', c: 3, d: [1] });
  });

  it('qs_over_path: the query string wins', async () => {
    expect((await call('GET', '/qp/path?a=qs')).json().input.a).toBe('qs');
  });

  it('path_over_qs: the path wins', async () => {
    expect((await call('GET', '/pq/path?a=qs')).json().input.a).toBe('path');
  });

  it('url_over_msg: the URL beats the payload', async () => {
    expect((await call('POST', '/um/url', { a: 'msg' })).json().input.a).toBe('url');
  });

  it('msg_over_url: the payload beats the URL', async () => {
    expect((await call('POST', '/mu/url', { a: 'msg' })).json().input.a).toBe('msg');
  });

  it('exposes headers, WSGI-style environment keys and the raw body', async () => {
    const res = await call('POST', '/raw', 'exact bytes {', { 'x-hook-signature': 'abc', 'x-custom': 'v', 'content-type': 'text/plain' });
    expect(res.json()).toMatchObject({ sig: 'abc', header: 'v', raw: 'exact bytes {' });
  });

  it('answers unknown URLs 404 with the CID', async () => {
    const res = await call('GET', '/no/such/thing');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ result: 'Error', cid: res.headers['x-svc-cid'], details: 'Not found' });
  });

  it('answers 413 past the channel body limit', async () => {
    const res = await call('POST', '/small', { much: 'more than sixteen bytes' });
    expect(res.statusCode).toBe(413);
    expect(res.json().cid).toBe(res.headers['x-svc-cid']);
  });

  it('answers 400 with the CID on malformed JSON', async () => {
    const res = await call('POST', '/echo/1/2', '{"a": ', { 'content-type': 'application/json' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ result: 'Error', cid: res.headers['x-svc-cid'] });
    expect(res.json().details).toMatch(/Invalid JSON/);
  });

  it('refuses prototype poisoning in JSON', async () => {
    const res = await call('POST', '/echo/1/2', '{"__proto__": {"admin": true}}', { 'content-type': 'application/json' });
    expect(res.statusCode).toBe(400);
  });
});

describe('methods (spec A.5–A.8)', () => {
  it('a channel restricted to one method answers others 405 with Allow', async () => {
    expect((await call('GET', '/get-only')).statusCode).toBe(200);
    const res = await call('POST', '/get-only', {});
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET');
    expect(res.json().cid).toBe(res.headers['x-svc-cid']);
  });

  it('verb handlers win over the generic handler', async () => {
    expect((await call('GET', '/things/1')).json()).toEqual({ verb: 'get' });
  });

  it('a verb without handler is 405 with the handled verbs in Allow', async () => {
    const res = await call('PUT', '/things/1', {});
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, POST, DELETE, HEAD, OPTIONS');
  });

  it('201 carries Location', async () => {
    const res = await call('POST', '/things/1', {});
    expect(res.statusCode).toBe(201);
    expect(res.headers.location).toBe('/things/9');
  });

  it('204 carries no body', async () => {
    const res = await call('DELETE', '/things/1');
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
  });

  it('HEAD returns headers and status only', async () => {
    const res = await call('HEAD', '/things/1');
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-count']).toBe('3');
    expect(res.body).toBe('');
  });

  it('OPTIONS may set Allow', async () => {
    const res = await call('OPTIONS', '/things/1');
    expect(res.statusCode).toBe(204);
    expect(res.headers.allow).toBe('GET, POST, DELETE, HEAD, OPTIONS');
  });
});

describe('typed input models (spec A.11)', () => {
  it('accepts a matching request and fills defaults', async () => {
    const res = await call('POST', '/typed', { name: 'Ann', age: 30 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ name: 'Ann', age: 30, vip: false, tags: [] });
  });

  it('400 names a missing required field, before the service runs', async () => {
    const res = await call('POST', '/typed', { name: 'Ann' });
    expect(res.statusCode).toBe(400);
    expect(res.json().details).toContain("'age'");
  });

  it('400 names a wrongly typed field', async () => {
    const res = await call('POST', '/typed', { name: 'Ann', age: 'thirty' });
    expect(res.statusCode).toBe(400);
    expect(res.json().details).toBe("Invalid input: field 'age' must be an integer");
  });

  it('converts URL text to the declared type', async () => {
    const res = await call('GET', '/typed/41?name=Bo&vip=true');
    expect(res.json()).toMatchObject({ age: 41, vip: true, name: 'Bo' });
    expect((await call('GET', '/typed/forty?name=Bo')).statusCode).toBe(400);
  });
});

describe('error mapping (spec Errors)', () => {
  const cases: Array<[string, number]> = [
    ['BadRequest', 400],
    ['Unauthorized', 401],
    ['Forbidden', 403],
    ['NotFound', 404],
    ['Conflict', 409],
    ['PayloadTooLarge', 413],
    ['BadGateway', 502],
    ['ServiceUnavailable', 503],
    ['GatewayTimeout', 504],
  ];
  for (const [kind, status] of cases) {
    it(`${kind} → ${status} with message and CID`, async () => {
      const res = await call('GET', `/raise/${kind}`);
      expect(res.statusCode).toBe(status);
      expect(res.json()).toEqual({ result: 'Error', cid: res.headers['x-svc-cid'], details: `reason for ${kind}` });
    });
  }

  it('any other exception is 500 and does not leak its message', async () => {
    for (const kind of ['plain', 'string']) {
      const res = await call('GET', `/raise/${kind}`);
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ result: 'Error', cid: res.headers['x-svc-cid'], details: 'Service raised an exception' });
    }
  });

  it('a service may set its own status and body', async () => {
    const res = await call('GET', '/raise/custom');
    expect(res.statusCode).toBe(418);
    expect(res.json()).toEqual({ mine: true });
  });

  it('an invalid header from a service is a 500, not a crash', async () => {
    const res = await call('GET', '/raise/badheader');
    expect(res.statusCode).toBe(500);
    expect((await call('GET', '/echo/1/2')).statusCode).toBe(200);
  });

  it('bytes and text with the content type the service set', async () => {
    const bytes = await call('GET', '/raise/bytes');
    expect(bytes.headers['content-type']).toBe('application/octet-stream');
    expect([...bytes.rawPayload]).toEqual([0, 1, 2, 255]);
    const text = await call('GET', '/raise/text');
    expect(text.body).toBe('plain text');
  });

  it('a channel whose service is not deployed answers 500 with the CID', async () => {
    const res = await call('GET', '/missing');
    expect(res.statusCode).toBe(500);
    expect(res.json().details).toBe("Service 'nosuch' is not deployed");
  });
});

describe('query strings', () => {
  it('treats __proto__ and constructor as ordinary parameters', async () => {
    const res = await call('GET', '/echo/1/2?__proto__=x&constructor=y');
    expect(res.statusCode).toBe(200);
    expect(res.json().input).toMatchObject({ a: '1', b: '2', constructor: 'y' });
    // biome-ignore lint/suspicious/noProto: an own key named __proto__ is what is checked
    expect(res.json().input.__proto__).toBe('x');
  });
});
