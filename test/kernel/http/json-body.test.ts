import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePlugin, type Exchange } from '../../../sdk/plugin/index.ts';
import { invokeRequestOf } from '../../../kernel/sandbox/request.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * A JSON body crosses to the sandbox once: as its text, parsed again there, when the payload is
 * still the JSON format's parse of it; as its value otherwise (a plugin step after the parse
 * could have changed it in place). Either way the service sees the same payload, input and text.
 */

// Tapped only on the `touched` channel: it changes the parsed payload in place, as a plugin may.
const stamper = definePlugin({
  name: 'stamper',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.3.0',
  configSchema: z.object({}),
  hooks: {
    validate: ({ channel }) =>
      channel.name === 'touched'
        ? (ex: Exchange) => {
            (ex.payload as Record<string, unknown>).stamped = true;
          }
        : undefined,
  },
});

const ECHO = `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => ({ payload: ctx.payload ?? null, input: ctx.input, raw: ctx.rawBody }) });
`;
const TYPED = `import { service, t } from 'svc/sdk';
export default service({
  input: { id: t.string(), qty: t.integer({ default: 1 }), note: t.string({ optional: true }) },
  handle: (ctx) => ({ payload: ctx.payload, input: ctx.input }),
});
`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({
    config: `
channel_rest:
  - { name: echo, url_path: '/echo/{id}', service: echo, security: none }
  - { name: typed, url_path: /typed, service: typed, security: none }
  - { name: touched, url_path: /touched, service: echo, security: none }
  - { name: fresh, url_path: '/fresh/{id}', service: fresh, security: none }
`,
    services: { 'echo.ts': ECHO, 'typed.ts': TYPED, 'fresh.ts': ECHO },
    extraPlugins: [stamper],
  });
});
afterAll(() => k?.close());

const post = (url: string, body: string) => k.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: body });

describe('a JSON body on its way to the service', () => {
  it('reaches it as payload, input merged with the URL, and the exact text', async () => {
    const text = '{ "name": "Ünïcode ✓", "items": [1, 2.5, {"deep": [null, true]}], "id": "from-body" }';
    const res = await post('/echo/from-url?x=1', text);
    expect(res.statusCode).toBe(200);
    const got = res.json();
    expect(got.raw).toBe(text);
    expect(got.payload).toEqual(JSON.parse(text));
    // Path parameters win over the body's fields by default (params_pri), the query joins in.
    expect(got.input).toEqual({ ...JSON.parse(text), id: 'from-url', x: '1' });
  });

  it('keeps non-object payloads and a typed model’s conversions and defaults', async () => {
    expect((await post('/echo/1', '[1,"two",{"three":3}]')).json().payload).toEqual([1, 'two', { three: 3 }]);
    expect((await post('/echo/1', '"just text"')).json().payload).toBe('just text');
    expect((await post('/echo/1', '0')).json().payload).toBe(0);
    const typed = (await post('/typed', '{"id":"a-1","note":"n"}')).json();
    expect(typed.payload).toEqual({ id: 'a-1', note: 'n' });
    expect(typed.input).toEqual({ id: 'a-1', qty: 1, note: 'n' });
  });

  it('reaches each of many concurrent calls whole, long bodies crossing beside their requests', async () => {
    // Long texts cross the pipe apart from their request's JSON and are cut out again in the
    // isolate by their lengths: calls batched together must each get their own.
    const texts = Array.from({ length: 60 }, (_, i) =>
      JSON.stringify({ id: `b${i}`, note: 'é€😀\t"q"\\'.repeat(i % 3 === 0 ? 2 : 40 + i), list: Array.from({ length: i }, (_, j) => j) }, null, i % 2 ? 2 : undefined),
    );
    expect(texts.filter((t) => t.length >= 512).length).toBeGreaterThan(20);
    expect(texts.filter((t) => t.length < 512).length).toBeGreaterThan(5);
    const answers = await Promise.all(texts.map((text, i) => post(`/echo/u${i}`, text)));
    answers.forEach((res, i) => {
      expect(res.statusCode).toBe(200);
      const got = res.json();
      expect(got.raw).toBe(texts[i]);
      expect(got.payload).toEqual(JSON.parse(texts[i]!));
      expect(got.input.id).toBe(`u${i}`);
    });
  });

  it('keeps long bodies with their calls while the isolate is built (first calls wait in a queue)', async () => {
    // `fresh` has had no call: its isolate was dropped after the deploy's build, so these calls
    // wait for the next build with their texts, then go in one batch.
    const texts = Array.from({ length: 8 }, (_, i) => JSON.stringify({ n: i, pad: `${i}é"`.repeat(300 + i * 50) }));
    const answers = await Promise.all(texts.map((text, i) => post(`/fresh/f${i}`, text)));
    answers.forEach((res, i) => {
      expect(res.statusCode).toBe(200);
      expect(res.json().raw).toBe(texts[i]);
      expect(res.json().payload).toEqual(JSON.parse(texts[i]!));
    });
  });

  it('carries a change a plugin made in place after the parse', async () => {
    const got = (await post('/touched', '{"a":1}')).json();
    expect(got.payload).toEqual({ a: 1, stamped: true });
    expect(got.input).toEqual({ a: 1, stamped: true });
  });

  it('still refuses what the kernel cannot parse, before any sandbox sees it', async () => {
    const res = await post('/echo/1', '{"a":');
    expect(res.statusCode).toBe(400);
    expect(res.json().cid).toBe(res.headers['x-svc-cid']);
    expect((await post('/echo/1', '{"__proto__":{"x":1}}')).statusCode).toBe(400);
  });
});

describe('invokeRequestOf', () => {
  const exchange = (rawBody: Buffer | undefined, payload: unknown, input: Record<string, unknown> = {}) =>
    ({
      cid: 'c1',
      channel: { name: 'ch' },
      method: 'POST',
      path: '/p',
      input,
      payload,
      rawBody,
      query: {},
      pathParams: {},
      files: undefined,
      auth: undefined,
      trace: undefined,
      visibleHeaders: () => ({ 'content-type': 'application/json' }),
    }) as unknown as Exchange;

  it('sends the text alone when the payload is its parse', () => {
    const payload = { a: 1 };
    const req = invokeRequestOf(exchange(Buffer.from('{"a":1}'), payload, payload), 'svc', true);
    expect(req).toMatchObject({ payloadFromBody: true, rawBody: { text: '{"a":1}' }, inputOverPayload: {} });
    expect(req.payload).toBeUndefined();
    expect(JSON.stringify(req)).not.toContain('"payload"');
  });

  it('sends the value beside the bytes when the text is not UTF-8 or the chain may have changed the value', () => {
    const latin1 = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]);
    const notUtf8 = invokeRequestOf(exchange(latin1, { a: '\ufffd' }), 'svc', true);
    expect(notUtf8.payloadFromBody).toBeUndefined();
    expect(notUtf8.payload).toEqual({ a: '\ufffd' });
    expect(notUtf8.rawBody).toEqual({ base64: latin1.toString('base64') });
    const kept = invokeRequestOf(exchange(Buffer.from('{"a":1}'), { a: 1 }), 'svc', false);
    expect(kept.payloadFromBody).toBeUndefined();
    expect(kept.payload).toEqual({ a: 1 });
    const empty = invokeRequestOf(exchange(undefined, undefined), 'svc', true);
    expect(empty.payloadFromBody).toBeUndefined();
    expect(empty.rawBody).toBeUndefined();
  });
});
