import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { HeldCalls } from '../../helpers/held-calls.ts';
import { waitFor } from '../../helpers/wait.ts';
import { homeIndex } from '../../../kernel/sandbox/pool.ts';

/**
 * Calls one service makes of another (`invoke`) in the sandbox pool: a callee that crashes its
 * process or runs out of time costs only its own call, and callers waiting on callees never take
 * the room those callees need in their isolates.
 */

/** A caller that gives its callee `timeoutMs` at most (less what it used). */
const callerWith = (timeoutMs: number) => `import { service, invoke } from 'svc/sdk';
export default service({
  limits: { timeoutMs: ${timeoutMs} },
  async handle(ctx) {
    try { return { result: await invoke(ctx.input.target) }; } catch (e) { return { caught: { kind: e.kind, code: e.code ?? null, message: e.message } }; }
  },
});
`;

let k: TestKernel | undefined;
let held: HeldCalls | undefined;
afterEach(async () => {
  await k?.close();
  await held?.close();
  k = held = undefined;
});

describe('a callee that fails hard', () => {
  const WORKERS = 2;
  const config = `
server:
  sandbox: { workers: ${WORKERS} }
channel_rest:
  - { name: caller, url_path: /caller, service: caller, security: none }
  - { name: patient, url_path: /patient, service: patient-caller, security: none }
`;
  const services = {
    'caller.ts': callerWith(1500),
    // Time for the crash on a loaded machine: building the string that kills the process can take seconds.
    'patient-caller.ts': callerWith(15000),
    // A long limit: the crash is what is tested, and building the array can be slow on a loaded machine.
    'crash.ts': `import { service } from 'svc/sdk';\nexport default service({ invokableBy: '*', limits: { timeoutMs: 15000, memoryMb: 32 }, handle: () => '1'.repeat(0xfffffff).split('') });\n`,
    'loop.ts': `import { service } from 'svc/sdk';\nexport default service({ invokableBy: '*', handle() { for (;;) {} } });\n`,
    'fine.ts': `import { service } from 'svc/sdk';\nexport default service({ invokableBy: '*', handle: () => ({ fine: true }) });\n`,
  };
  const call = (target: string, url = '/caller') => k!.app.inject({ method: 'POST', url, payload: { target } });

  it('crashing its sandbox process (a V8 fatal error) costs only its call: it runs away from its caller, which catches ServiceUnavailable', async () => {
    // The premise: the callee's home process is its caller's, so only routing it elsewhere saves the caller.
    expect(homeIndex('crash', WORKERS)).toBe(homeIndex('patient-caller', WORKERS));
    k = await startKernel({ config, services });
    const before = k.kernel.pool.pids();
    const res = await call('crash', '/patient');
    // The caller answered itself: its own process lived through the callee's crash.
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ caught: { kind: 'ServiceUnavailable', code: 'SANDBOX_CRASHED', message: "Service 'crash': Service sandbox crashed and was restarted" } });
    const after = await waitFor('the crashed sandbox process to be replaced', () => {
      const pids = k!.kernel.pool.pids();
      return pids.length === WORKERS && pids.some((pid) => !before.includes(pid)) && pids;
    });
    expect(after.filter((pid) => before.includes(pid))).toHaveLength(WORKERS - 1);
    // The next invoke finds the callee's process restarted.
    expect((await call('fine')).json()).toEqual({ result: { fine: true } });
  });

  it("an infinite loop is cut at its caller's remaining time; the caller catches GatewayTimeout and both services keep serving", async () => {
    k = await startKernel({ config, services });
    const res = await call('loop');
    expect(res.statusCode).toBe(200);
    expect(res.json().caught).toMatchObject({ kind: 'GatewayTimeout', code: 'SERVICE_TIMEOUT' });
    expect((await call('fine')).json()).toEqual({ result: { fine: true } });
    expect((await call('loop')).json().caught.code).toBe('SERVICE_TIMEOUT');
  });
});

describe('callers waiting on callees', () => {
  /** Calls an isolate holds at once, per invoke depth: small, so the test fills it. */
  const HELD = 3;
  /** Waits at the gate, then invokes the other service, which answers at once when it is the callee. */
  const mutual = (self: string, other: string) => `import { service, invoke, outgoing } from 'svc/sdk';
export default service({
  invokableBy: ['${other}'],
  limits: { timeoutMs: 5000 },
  async handle(ctx) {
    if (ctx.input.leaf) return { leaf: '${self}' };
    await outgoing('gate').post(ctx.cid, { payload: { tag: '${self}' } });
    return { got: await invoke('${other}', { leaf: true }) };
  },
});
`;

  it('never take the room their callees need: A → B and B → A across requests, each isolate full of parked callers, all answer', async () => {
    held = await new HeldCalls().start();
    k = await startKernel({
      config: `
server:
  sandbox: { workers: 1, max_calls_per_isolate: ${HELD} }
outgoing_rest:
  - ${held.outgoing('gate')}
channel_rest:
  - { name: a, url_path: /a, service: a, security: none }
  - { name: b, url_path: /b, service: b, security: none }
`,
      services: { 'a.ts': mutual('a', 'b'), 'b.ts': mutual('b', 'a') },
    });
    const post = (path: string) => k!.app.inject({ method: 'POST', url: path, payload: {} });
    const answers = [...Array.from({ length: HELD }, () => post('/a')), ...Array.from({ length: HELD }, () => post('/b'))];
    // Every call a channel started is parked at the gate: each isolate holds as many as it may.
    await held.waitHeld('a', HELD);
    await held.waitHeld('b', HELD);
    held.release('a');
    held.release('b');
    // Each now invokes the other service, whose isolate is full of callers from channels: the
    // callees run on their own depth's share, so every caller gets its answer.
    const done = await Promise.all(answers);
    expect(done.map((r) => r.statusCode)).toEqual(Array(2 * HELD).fill(200));
    expect(done.map((r) => r.json())).toEqual([...Array(HELD).fill({ got: { leaf: 'b' } }), ...Array(HELD).fill({ got: { leaf: 'a' } })]);
  });

  it("a callee that waited for room past its caller's time is answered SERVICE_TIMEOUT and never started: its isolate's other calls go on", async () => {
    held = await new HeldCalls().start();
    const gated = `import { service, outgoing } from 'svc/sdk';
export default service({ invokableBy: ['a', 'c'], async handle(ctx) {
  if (ctx.input.gate) await outgoing('gate').post(ctx.cid, { payload: { tag: ctx.input.gate } });
  // Work with no host call in it: only the watchdog can end it.
  const end = Date.now() + (ctx.input.spinMs ?? 0);
  while (Date.now() < end) {}
  return { b: ctx.input.gate ?? 'spun' };
} });
`;
    const invoking = (input: string, options: string) => `import { service, invoke } from 'svc/sdk';
export default service({ async handle() { try { return await invoke('b', ${input}, ${options}); } catch (e) { return { code: e.code }; } } });
`;
    k = await startKernel({
      config: `
server:
  sandbox: { workers: 1, max_calls_per_isolate: 1 }
outgoing_rest:
  - ${held.outgoing('gate')}
channel_rest:
  - { name: a, url_path: /a, service: a, security: none }
  - { name: b, url_path: /b, service: b, security: none }
  - { name: c, url_path: /c, service: c, security: none }
`,
      services: { 'b.ts': gated, 'a.ts': invoking("{ gate: 'x' }", '{}'), 'c.ts': invoking('{ spinMs: 1000 }', '{ timeoutMs: 200 }') },
    });
    const post = (path: string, payload: object = {}) => k!.app.inject({ method: 'POST', url: path, payload });
    // b holds a call from its channel (depth 0) and one a invoked (depth 1), each its depth's only one.
    const fromChannel = post('/b', { gate: 'y' });
    await held.waitHeld('y');
    const fromA = post('/a');
    await held.waitHeld('x');
    // c's invoke of b waits for room at depth 1 until c's 200 ms are spent.
    expect((await post('/c')).json()).toEqual({ code: 'SERVICE_TIMEOUT' });
    held.release('x');
    expect((await fromA).json()).toEqual({ b: 'x' });
    // c's call now finds room: it is refused, not started (which would cut b's isolate and the call it holds).
    held.release('y');
    const answered = await fromChannel;
    expect(answered.statusCode).toBe(200);
    expect(answered.json()).toEqual({ b: 'y' });
  });
});
