import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePlugin, type Exchange } from '../../../sdk/plugin/index.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * A value a service returns on a JSON channel comes back from the sandbox as its JSON text when
 * the JSON format's serializer is the channel's only serialize step (contributes.jsonReplyFormats):
 * the kernel sends that text without decoding and encoding it again. Clients get the same bytes
 * and types either way; a channel with another serialize step gets the value, as before.
 */

// Tapped only on the `wrapped` channel, after the JSON serializer (extra plugins load last): a
// second serialize step, which could read the service's value had it run first.
const wrapper = definePlugin({
  name: 'wrapper',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.4.0',
  configSchema: z.object({}),
  hooks: {
    serialize: ({ channel }) =>
      channel.name === 'wrapped'
        ? (ex: Exchange) => {
            ex.response.headers['x-wrapped'] = typeof ex.response.body;
          }
        : undefined,
  },
});

// `key` answers with the key toJSON was called with: '' when the value was encoded apart, 'body' inside the envelope.
const VALUES = `import { service } from 'svc/sdk';
const cyclic = {}; cyclic.self = cyclic;
const outputs = {
  object: () => ({ name: 'Ünïcode ✓ "quoted" \\\\ \\t', list: [1, 2.5, -0, 1e21, null, true, { deep: [] }] }),
  array: () => [1, 'two', { three: 3 }],
  number: () => 42.5,
  nan: () => NaN,
  bool: () => false,
  nul: () => null,
  date: () => new Date(Date.UTC(2026, 10, 24)),
  tojsonText: () => ({ toJSON: () => 'as text' }),
  tojsonUndefined: () => ({ toJSON: () => undefined }),
  text: () => 'plain',
  key: () => ({ toJSON: (key) => ({ key }) }),
  bytes: () => new Uint8Array([104, 105]),
  bigint: () => ({ n: 1n }),
  cyclic: () => cyclic,
  none: () => undefined,
};
export default service({
  handle: async (ctx) => {
    const kind = ctx.query.kind;
    if (ctx.query.type) ctx.response.contentType = ctx.query.type;
    if (ctx.query.status) ctx.response.status = Number(ctx.query.status);
    ctx.response.headers['x-kind'] = kind;
    if (ctx.query.wait) await Promise.resolve();
    return outputs[kind]();
  },
});
`;

// Sets nothing on the response unless asked: the runtime and the kernel then take the plain 200's short way.
const PLAIN = `import { service } from 'svc/sdk';
export default service({
  handle: (ctx) => {
    if (ctx.query.log) ctx.log.info('logged by plain');
    if (ctx.query.header) ctx.response.headers['x-set'] = 'yes';
    if (ctx.query.status) ctx.response.status = Number(ctx.query.status);
    if (ctx.query.type) ctx.response.contentType = ctx.query.type;
    return { plain: true, list: [1, 'é'] };
  },
});
`;

const logs: Array<Record<string, unknown>> = [];
let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({
    config: `
channel_rest:
  - { name: values, url_path: /values, service: values, security: none }
  - { name: wrapped, url_path: /wrapped, service: values, security: none }
  - { name: xml, url_path: /xml, service: values, security: none, data_format: xml }
  - { name: plain, url_path: /plain, service: plain, security: none }
`,
    services: { 'values.ts': VALUES, 'plain.ts': PLAIN },
    logs,
    extraPlugins: [wrapper],
  });
});
afterAll(() => k?.close());

const get = (path: string) => k.app.inject({ method: 'GET', url: path });
const JSON_TYPE = 'application/json; charset=utf-8';

describe('a JSON channel answers a returned value with its JSON text', () => {
  it.each([
    ['object', { name: 'Ünïcode ✓ "quoted" \\ \t', list: [1, 2.5, 0, 1e21, null, true, { deep: [] }] }],
    ['array', [1, 'two', { three: 3 }]],
    ['number', 42.5],
    ['nan', null],
    ['bool', false],
    ['nul', null],
    ['date', '2026-11-24T00:00:00.000Z'],
    ['tojsonText', 'as text'],
    ['text', 'plain'],
  ])('%s: the same JSON, typed, as the format gives', async (kind, expected) => {
    for (const wait of ['', '&wait=1']) {
      const res = await get(`/values?kind=${kind}${wait}`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe(JSON_TYPE);
      expect(res.headers['x-kind']).toBe(kind);
      expect(res.headers['x-svc-cid']).toBeTruthy();
      expect(res.body).toBe(JSON.stringify(expected));
    }
  });

  it('is encoded in the sandbox: toJSON is called as for a top-level value', async () => {
    expect((await get('/values?kind=key')).json()).toEqual({ key: '' });
    expect((await get('/values?kind=key&wait=1')).json()).toEqual({ key: '' });
  });

  it('keeps the type and status a service chose, and a typed string as it is', async () => {
    const typed = await get('/values?kind=object&type=application/vnd.svc%2Bjson&status=201');
    expect(typed.statusCode).toBe(201);
    expect(typed.headers['content-type']).toMatch(/^application\/vnd\.svc\+json/);
    expect(typed.json().list).toHaveLength(7);
    const raw = await get('/values?kind=text&type=text/csv');
    expect(raw.headers['content-type']).toMatch(/^text\/csv/);
    expect(raw.body).toBe('plain');
    const none = await get('/values?kind=none');
    expect(none.statusCode).toBe(200);
    expect(none.body).toBe('');
    const empty = await get('/values?kind=tojsonUndefined');
    expect(empty.body).toBe('');
    expect((await get('/values?kind=bytes&type=application/octet-stream')).rawPayload).toEqual(Buffer.from('hi'));
  });

  it('answers a value JSON cannot hold with the service-output error and the CID', async () => {
    for (const kind of ['bigint', 'cyclic']) {
      const res = await get(`/values?kind=${kind}`);
      expect(res.statusCode).toBe(500);
      expect(res.json().cid).toBe(res.headers['x-svc-cid']);
    }
  });
});

describe('a 200 with nothing set on the response', () => {
  it('answers the same whether or not anything was set beside the value', async () => {
    const body = JSON.stringify({ plain: true, list: [1, 'é'] });
    const plain = await get('/plain');
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toBe(JSON_TYPE);
    expect(plain.body).toBe(body);
    const logged = await get('/plain?log=1');
    expect(logged.body).toBe(body);
    expect(logs.some((l) => l.msg === 'logged by plain' && l.cid === logged.headers['x-svc-cid'])).toBe(true);
    const withHeader = await get('/plain?header=1');
    expect(withHeader.headers['x-set']).toBe('yes');
    expect(withHeader.body).toBe(body);
    const created = await get('/plain?status=201');
    expect(created.statusCode).toBe(201);
    expect(created.body).toBe(body);
    const typed = await get('/plain?type=application/vnd.x%2Bjson');
    expect(typed.headers['content-type']).toMatch(/^application\/vnd\.x\+json/);
    expect(typed.body).toBe(body);
  });
});

describe('a channel whose serialize phase reads the value', () => {
  it('gets the value, not its text, when a plugin step joins the JSON serializer', async () => {
    const res = await get('/wrapped?kind=array');
    expect(res.json()).toEqual([1, 'two', { three: 3 }]);
    expect(res.headers['x-wrapped']).toBe('string');
    // Encoded by the kernel's JSON serializer: the value crossed inside the envelope.
    expect((await get('/wrapped?kind=key')).json()).toEqual({ key: 'body' });
  });

  it('gets the value on an XML channel', async () => {
    const res = await get('/xml?kind=object');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/xml/);
    expect(res.body).toContain('Ünïcode');
    expect(res.body).not.toContain('{');
  });
});
