import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { waitFor } from '../../helpers/wait.ts';
import { Upstream, json } from '../../plugins/outgoing/rest/upstream.ts';

/**
 * Service-to-service invoke (the SDK's invoke and invokeAll, the kernel's service.invoke host
 * call): real isolates, the kernel's pool, through channels with fastify inject.
 */

/** The time limit of the calling service. */
const CALLER_LIMIT_MS = 1500;

/** Invokes what its input says and reports the result, or what it caught: the error's class, kind, status, code and issues. */
const CALLER = `import { service, invoke, invokeAll, BadRequest, Forbidden, NotFound, Conflict, PayloadTooLarge, GatewayTimeout, ServiceUnavailable, ServiceError } from 'svc/sdk';
const CLASSES = { BadRequest, Forbidden, NotFound, Conflict, PayloadTooLarge, GatewayTimeout, ServiceUnavailable };
const described = (e) => ({ kind: e.kind ?? null, status: e.status ?? null, code: e.code ?? null, message: e.message, issues: e.issues ?? null, classes: Object.keys(CLASSES).filter((k) => e instanceof CLASSES[k]), serviceError: e instanceof ServiceError });
export default service({
  limits: { timeoutMs: ${CALLER_LIMIT_MS} },
  async handle(ctx) {
    const { target, input, timeoutMs, method, all, rethrow, twice } = ctx.input;
    try {
      if (all) return { result: await invokeAll(all) };
      const result = await invoke(target, input, { timeoutMs, method });
      if (twice) return { result, again: await invoke(target, input) };
      return result instanceof Uint8Array ? { bytes: [...result] } : { result };
    } catch (e) {
      if (rethrow) throw e;
      return { caught: described(e) };
    }
  },
});
`;

const ECHO = `import { service, t } from 'svc/sdk';
export default service({
  invokableBy: ['caller'],
  input: { name: t.string(), qty: t.integer({ default: 1 }) },
  POST(ctx) {
    ctx.log.info('echo ' + ctx.input.name);
    return { name: ctx.input.name, qty: ctx.input.qty, cid: ctx.cid, channel: ctx.channel ?? null, method: ctx.method, payload: ctx.payload, delivery: ctx.delivery ?? null, user: ctx.user ?? null };
  },
  GET: (ctx) => ({ got: ctx.input.name }),
});
`;

const THROWER = `import { service, NotFound, Conflict, PayloadTooLarge } from 'svc/sdk';
export default service({
  invokableBy: '*',
  handle(ctx) {
    switch (ctx.input.what) {
      case 'notfound': throw new NotFound('no order 7');
      case 'conflict': throw new Conflict('order 7 is taken');
      case 'toolarge': throw new PayloadTooLarge('order 7 is too long');
      case 'status413': ctx.response.status = 413; return {};
      case 'error': throw new TypeError('boom');
      case 'status': ctx.response.status = 404; ctx.response.headers['x-why'] = 'gone'; return { missing: true };
      case 'created': ctx.response.status = 201; ctx.response.headers['x-why'] = 'new'; return { made: true };
      case 'bytes': return new Uint8Array([1, 2, 255]);
      default: return { ok: true };
    }
  },
});
`;

const hop = (n: number) => `import { service, invoke } from 'svc/sdk';
export default service({ invokableBy: '*', async handle() {
  try { return { at: ${n}, next: await invoke('hop${n + 1}') }; } catch (e) { return { at: ${n}, refused: e.code, message: e.message }; }
} });
`;
const bounce = (next: string) => `import { service, invoke } from 'svc/sdk';
export default service({ invokableBy: '*', async handle() {
  try { return { next: await invoke('${next}') }; } catch (e) { return { refused: e.code, message: e.message }; }
} });
`;

const services: Record<string, string> = {
  'caller.ts': CALLER,
  'echo.ts': ECHO,
  'thrower.ts': THROWER,
  'private.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ secret: true }) });\n`,
  'picky.ts': `import { service } from 'svc/sdk';\nexport default service({ invokableBy: ['someone-else'], handle: () => ({ picked: true }) });\n`,
  'slow.ts': `import { service } from 'svc/sdk';\nexport default service({ invokableBy: '*', limits: { timeoutMs: 10000 }, handle() { for (;;) {} } });\n`,
  // Its own isolate: a test's timed-out call resets slow's isolate after the answer, which must not reach the next test's call.
  'slow2.ts': `import { service } from 'svc/sdk';\nexport default service({ invokableBy: '*', limits: { timeoutMs: 10000 }, handle() { for (;;) {} } });\n`,
  'relay.ts': `import { service, outgoing } from 'svc/sdk';\nexport default service({ invokableBy: '*', async handle(ctx) { ctx.log.info('relaying'); return (await outgoing('upstream').post(ctx.cid, { payload: {} })).data; } });\n`,
  'ping.ts': bounce('pong'),
  'pong.ts': bounce('ping'),
  'hop1.ts': hop(1),
  'hop2.ts': hop(2),
  'hop3.ts': hop(3),
  'hop4.ts': hop(4),
};

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

let k: TestKernel;
const upstream = new Upstream().route('/t', (req, res) => json(res, 200, { traceparent: req.headers.traceparent ?? null }));
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  await upstream.start();
  k = await startKernel({
    config: `
server:
  invoke_max_depth: 3
outgoing_rest:
  - { name: upstream, address: "http://127.0.0.1:${upstream.port}", url_path: /t }
channel_rest:
  - { name: caller, url_path: /caller, service: caller, security: none }
  - { name: echo, url_path: /echo, service: echo, security: none }
`,
    services,
    logs,
  });
}, 60_000);
afterAll(async () => {
  await k?.close();
  await upstream.close();
});

const call = (body: Record<string, unknown>, headers: Record<string, string> = {}) => k.app.inject({ method: 'POST', url: '/caller', payload: body, headers });

describe('invoke', () => {
  it("returns the callee's value; the callee sees its input as ctx.input and payload, POST, no channel, no delivery, and a child CID", async () => {
    const res = await call({ target: 'echo', input: { name: 'pen' }, twice: true });
    expect(res.statusCode).toBe(200);
    const cid = res.headers['x-svc-cid'];
    const { result, again } = res.json();
    // The default of the model (qty 1) is filled as a channel fills it.
    expect(result).toEqual({ name: 'pen', qty: 1, cid: `${cid}.1`, channel: null, method: 'POST', payload: { name: 'pen', qty: 1 }, delivery: null, user: null });
    expect(again.cid).toBe(`${cid}.2`);
  });

  it("the callee acts for the caller's user, and sees no delivery when the caller runs from the queue", async () => {
    const user = { username: 'ann', definition: 'crm', type: 'basic_auth' };
    const delivery = { attempt: 2, firstReceivedAt: new Date(0).toISOString(), cid: 'queued0001' };
    // KernelApi.invoke is how the queue runs a service: with the user and the delivery it stored.
    const res = await k.kernel.invoke({ service: 'caller', cid: 'c0ffee', method: 'POST', input: { target: 'echo', input: { name: 'ink' } }, auth: user, delivery });
    expect((res.body as { result: Record<string, unknown> }).result).toMatchObject({ cid: 'c0ffee.1', user, delivery: null });
  });

  it("runs the verb handler asked for; one the callee lacks is refused before it runs", async () => {
    expect((await call({ target: 'echo', input: { name: 'ink' }, method: 'GET' })).json()).toEqual({ result: { got: 'ink' } });
    const refused = (await call({ target: 'echo', input: { name: 'ink' }, method: 'DELETE' })).json().caught;
    expect(refused).toMatchObject({ kind: 'Error', status: 500, code: 'METHOD_NOT_ALLOWED', message: "Service 'echo' has no DELETE handler (it has GET, POST)" });
  });

  it("checks the callee's input model as a channel does: BadRequest with every field's issue, 400 when the caller lets it through", async () => {
    const caught = (await call({ target: 'echo', input: { qty: 'two' } })).json().caught;
    expect(caught).toEqual({
      kind: 'BadRequest',
      status: 400,
      code: 'INVALID_INPUT',
      message: "Invalid input of 'echo': missing required field 'name'",
      issues: [
        { field: 'name', message: "missing required field 'name'" },
        { field: 'qty', message: "field 'qty' must be an integer" },
      ],
      classes: ['BadRequest'],
      serviceError: true,
    });
    const through = await call({ target: 'echo', input: { qty: 2 }, rethrow: true });
    expect(through.statusCode).toBe(400);
    expect(through.json()).toEqual({ result: 'Error', cid: through.headers['x-svc-cid'], details: "Invalid input of 'echo': missing required field 'name'" });
  });

  it("the callee's NotFound and Conflict reach the caller as those classes, with no code; uncaught, they are the caller's answer", async () => {
    const notFound = (await call({ target: 'thrower', input: { what: 'notfound' } })).json().caught;
    expect(notFound).toMatchObject({ kind: 'NotFound', status: 404, code: null, message: 'no order 7', classes: ['NotFound'] });
    const conflict = (await call({ target: 'thrower', input: { what: 'conflict' } })).json().caught;
    expect(conflict).toMatchObject({ kind: 'Conflict', status: 409, code: null, message: 'order 7 is taken', classes: ['Conflict'] });
    const through = await call({ target: 'thrower', input: { what: 'notfound' }, rethrow: true });
    expect(through.statusCode).toBe(404);
    expect(through.json()).toEqual({ result: 'Error', cid: through.headers['x-svc-cid'], details: 'no order 7' });
  });

  it("the callee's PayloadTooLarge, or a 413 it set, reaches the caller as PayloadTooLarge; uncaught, the caller answers 413", async () => {
    const thrown = (await call({ target: 'thrower', input: { what: 'toolarge' } })).json().caught;
    expect(thrown).toMatchObject({ kind: 'PayloadTooLarge', status: 413, code: null, message: 'order 7 is too long', classes: ['PayloadTooLarge'], serviceError: true });
    const set = (await call({ target: 'thrower', input: { what: 'status413' } })).json().caught;
    expect(set).toMatchObject({ kind: 'PayloadTooLarge', status: 413, message: "Service 'thrower' answered 413", classes: ['PayloadTooLarge'] });
    const through = await call({ target: 'thrower', input: { what: 'toolarge' }, rethrow: true });
    expect(through.statusCode).toBe(413);
    expect(through.json()).toEqual({ result: 'Error', cid: through.headers['x-svc-cid'], details: 'order 7 is too long' });
  });

  it("an exception in the callee is logged under the callee's CID; the caller gets SERVICE_FAILED, and 500 when it lets it through", async () => {
    const res = await call({ target: 'thrower', input: { what: 'error' } });
    expect(res.json().caught).toMatchObject({ kind: 'Error', status: 500, code: 'SERVICE_FAILED', message: "Service 'thrower' raised an exception: TypeError: boom", classes: [] });
    const logged = await waitFor('the callee exception in the log', () => logs.find((l) => l.msg === 'service raised an exception' && l.cid === `${res.headers['x-svc-cid']}.1`));
    expect(logged).toMatchObject({ service: 'thrower', error: 'TypeError: boom' });
    expect(String(logged.stack)).toMatch(/thrower\.ts:\d+:\d+/);
    const through = await call({ target: 'thrower', input: { what: 'error' }, rethrow: true });
    expect(through.statusCode).toBe(500);
    expect(through.json().details).toBe('Service raised an exception');
  });

  it("a status of 400 or more the callee set is that status's error; a lower one and the callee's headers do not reach the caller", async () => {
    expect((await call({ target: 'thrower', input: { what: 'status' } })).json().caught).toMatchObject({ kind: 'NotFound', status: 404, code: null, message: "Service 'thrower' answered 404", classes: ['NotFound'] });
    const created = await call({ target: 'thrower', input: { what: 'created' } });
    expect(created.statusCode).toBe(200);
    expect(created.headers['x-why']).toBeUndefined();
    expect(created.json()).toEqual({ result: { made: true } });
  });

  it('bytes the callee returns arrive as a Uint8Array', async () => {
    expect((await call({ target: 'thrower', input: { what: 'bytes' } })).json()).toEqual({ bytes: [1, 2, 255] });
  });

  it('refuses a callee that does not name the caller in its invokableBy, or declares none', async () => {
    for (const target of ['private', 'picky']) {
      const caught = (await call({ target })).json().caught;
      expect(caught).toMatchObject({ kind: 'Forbidden', status: 403, code: 'INVOKE_FORBIDDEN', message: `Service '${target}' may not be invoked by 'caller': its invokableBy does not name it`, classes: ['Forbidden'] });
    }
  });

  it('a service that is not deployed is NotFound with INVOKE_NOT_FOUND, and the caller keeps running', async () => {
    const caught = (await call({ target: 'nope' })).json().caught;
    expect(caught).toMatchObject({ kind: 'NotFound', status: 404, code: 'INVOKE_NOT_FOUND', message: "No service 'nope' is deployed", classes: ['NotFound'] });
    expect((await call({ target: 'echo', input: { name: 'after' } })).json().result.name).toBe('after');
  });

  it('refuses a cycle (A → B → A) with INVOKE_CYCLE naming the chain', async () => {
    const { result } = (await call({ target: 'ping' })).json();
    expect(result).toEqual({ next: { refused: 'INVOKE_CYCLE', message: 'Invoke cycle: caller → ping → pong → ping' } });
  });

  it('caps the depth at server.invoke_max_depth (3 here): the fourth level is refused with INVOKE_DEPTH', async () => {
    const { result } = (await call({ target: 'hop1' })).json();
    expect(result).toEqual({ at: 1, next: { at: 2, next: { at: 3, refused: 'INVOKE_DEPTH', message: 'Invoke chain deeper than 3: caller → hop1 → hop2 → hop3 → hop4' } } });
  });

  it("cuts the callee at the caller's remaining time (less a reserve), not at its own 10 s, so the caller can still answer", async () => {
    const res = await call({ target: 'slow' });
    // The caller answered itself: had the callee had its own limit, the caller's would have cut it first (503).
    expect(res.statusCode).toBe(200);
    const caught = res.json().caught;
    expect(caught).toMatchObject({ kind: 'GatewayTimeout', status: 504, code: 'SERVICE_TIMEOUT', classes: ['GatewayTimeout'] });
    const limit = Number(/within (\d+) ms$/.exec(caught.message)?.[1]);
    expect(limit).toBeLessThan(CALLER_LIMIT_MS);
    expect(limit).toBeGreaterThan(CALLER_LIMIT_MS / 2);
  });

  it('timeoutMs shortens the callee further; uncaught, the timeout is the caller’s 504', async () => {
    expect((await call({ target: 'slow2', timeoutMs: 200 })).json().caught).toMatchObject({ code: 'SERVICE_TIMEOUT', message: "Service 'slow2' did not answer within 200 ms" });
    const through = await call({ target: 'slow', timeoutMs: 200, rethrow: true });
    expect(through.statusCode).toBe(504);
    expect(through.json().details).toBe("Service 'slow' did not answer within 200 ms");
  });

  it('invokeAll resolves with the results in order, and rejects with the first error', async () => {
    const all = [
      { service: 'echo', input: { name: 'a' } },
      { service: 'thrower', input: { what: 'ok' } },
      { service: 'echo', input: { name: 'b', qty: 3 } },
    ];
    const { result } = (await call({ all })).json();
    expect(result.map((r: Record<string, unknown>) => r.name ?? r.ok)).toEqual(['a', true, 'b']);
    expect(result[2].qty).toBe(3);
    const caught = (await call({ all: [...all, { service: 'thrower', input: { what: 'conflict' } }] })).json().caught;
    expect(caught).toMatchObject({ kind: 'Conflict', message: 'order 7 is taken' });
  });

  it("carries the caller's trace context: the callee's log lines and its outgoing calls share the client's trace id", async () => {
    const res = await call({ target: 'relay' }, { traceparent: TRACEPARENT });
    expect(res.statusCode).toBe(200);
    const seen = res.json().result.traceparent as string;
    expect(seen.split('-')[1]).toBe(TRACE_ID);
    const line = await waitFor('the callee log line', () => logs.find((l) => l.msg === 'relaying' && l.cid === `${res.headers['x-svc-cid']}.1`));
    expect(line).toMatchObject({ service: 'relay', trace_id: TRACE_ID });
  });
});
