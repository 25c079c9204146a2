import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServiceRunner } from '../../../kernel/sandbox/runner.ts';
import { SvcError } from '../../../kernel/errors.ts';
import { waitFor } from '../../helpers/wait.ts';
import { CRASH, deploy, ECHO, request, startRunner, tenant } from './tenant-runner.ts';

/** Runs code for `ctx.input.ms` of wall time: a whole core while it runs. */
const SPIN = `import { service } from 'svc/sdk';\nexport default service({ handle(ctx) { const end = Date.now() + ctx.input.ms; let x = 0; while (Date.now() < end) x += Math.sqrt(x + 1); return { x: x > 0 }; } });\n`;

/**
 * Trust levels (kernel/sandbox/README.md, "Tenants"): the platform's services, the tenants'
 * shared processes and a tenant's own processes are separate groups of sandbox processes. Which
 * process ran a call is shown by what its crash takes down.
 */

/** Keeps `n` small objects: 300,000 of them are past 16 MB (a tenant's memory_mb below). */
const HOARD = `import { service } from 'svc/sdk';\nexport default service({ limits: { memoryMb: 64 }, handle(ctx) { const a = []; for (let i = 0; i < ctx.input.n; i++) a.push({ i, s: 'x' + i }); return a.length; } });\n`;

/** Waits on a host call (any) until the test opens the gate: a call that is surely in flight. */
const GATED = `import { service, outgoing } from 'svc/sdk';
export default service({ async handle(ctx) {
  try { await outgoing('gate').post(ctx.cid, { payload: {} }); } catch {}
  return { done: true };
} });
`;

class Gate {
  readonly waiting: string[] = [];
  /** The pool's id of each waiting call, as a call it invoked would name its caller. */
  readonly callers: number[] = [];
  private readonly open: Array<() => void> = [];
  readonly hostCall = (_op: string, _args: string, invocation: { service: string }, caller: { id: number }) =>
    new Promise<string>((resolve) => {
      this.waiting.push(invocation.service);
      this.callers.push(caller.id);
      this.open.push(() => resolve(JSON.stringify({ ok: true, value: { status: 200, headers: {}, body: null } })));
    });
  release(): void {
    for (const open of this.open.splice(0)) open();
  }
}

let runner: ServiceRunner | undefined;
afterEach(async () => {
  await runner?.close();
  runner = undefined;
});

/** The nice value of each thread of a process (/proc/PID/task/TID/stat, field 19). */
const niceOf = (pid: number) =>
  readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    return { name: readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim(), nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) };
  });

const code = async (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (e instanceof SvcError ? e.code : String(e)));

describe('process groups', () => {
  it('without tenants only the platform processes run; the shared ones start with the first tenant, a tenant with processes gets its own', async () => {
    runner = await startRunner({ workers: 2, tenantWorkers: 1 });
    expect(runner.pids()).toHaveLength(2);
    await runner.setTenants([]);
    expect(runner.pids()).toHaveLength(2);
    expect(runner.stats().tenants).toEqual([]);
    await runner.setTenants([tenant('acme')]);
    expect(runner.pids()).toHaveLength(3);
    await runner.setTenants([tenant('acme'), tenant('own', { processes: 2 })]);
    expect(runner.pids()).toHaveLength(5);
    expect(runner.stats().processes).toBe(5);
    expect(runner.stats().tenants.map((t) => t.tenant)).toEqual(['acme', 'own']);
  });

  it("a tenant's crash takes down only its group's process, never the platform's; the platform's crash never a tenant's", async () => {
    runner = await startRunner({ workers: 1, tenantWorkers: 1 });
    const [platformPid] = runner.pids();
    await runner.setTenants([tenant('acme')]);
    const [, sharedPid] = runner.pids();
    await deploy(runner, { crash: CRASH, 'acme/crash': CRASH, 'acme/echo': ECHO, echo: ECHO });
    expect(await code(runner.invoke(request('acme/crash')))).toBe('SANDBOX_CRASHED');
    await waitFor('the shared process to be replaced', () => runner!.pids().length === 2 && !runner!.pids().includes(sharedPid!));
    expect(runner.pids()).toContain(platformPid);
    const replaced = runner.pids().find((p) => p !== platformPid)!;
    expect(await code(runner.invoke(request('crash')))).toBe('SANDBOX_CRASHED');
    await waitFor('the platform process to be replaced', () => runner!.pids().length === 2 && !runner!.pids().includes(platformPid!));
    expect(runner.pids()).toContain(replaced);
    expect(await code(runner.invoke(request('acme/echo')))).toBe('ok');
    expect(await code(runner.invoke(request('echo')))).toBe('ok');
  });

  it("a crash in one tenant's own process costs no other tenant, nor the platform, a request in flight", async () => {
    const gate = new Gate();
    runner = await startRunner({ workers: 1, tenantWorkers: 1, hostCall: gate.hostCall });
    await runner.setTenants([tenant('bad', { processes: 1 }), tenant('good', { processes: 1 }), tenant('shared')]);
    await deploy(runner, { 'bad/crash': CRASH, 'bad/gated': GATED, 'good/gated': GATED, 'shared/gated': GATED, gated: GATED });
    const before = runner.pids();
    expect(before).toHaveLength(4);
    const inFlight = ['good/gated', 'shared/gated', 'gated', 'bad/gated'].map((s) => runner!.invoke(request(s)));
    await waitFor('four calls waiting on the host', () => gate.waiting.length === 4);
    expect(await code(runner.invoke(request('bad/crash')))).toBe('SANDBOX_CRASHED');
    gate.release();
    const outcomes = await Promise.all(inFlight.map(code));
    // bad's own call in flight died with its process; nobody else's did.
    expect(outcomes).toEqual(['ok', 'ok', 'ok', 'SANDBOX_CRASHED']);
    // Only bad's process died (its two services, both in flight, now run on probation beside its restarted one).
    expect(before.filter((p) => !runner!.pids().includes(p))).toHaveLength(1);
  });

  it("a callee of a service on probation waits for a process that holds it, never goes to the caller's, which holds only the caller", async () => {
    const gate = new Gate();
    runner = await startRunner({ workers: 1, tenantWorkers: 1, hostCall: gate.hostCall });
    await runner.setTenants([tenant('bad', { processes: 1 })]);
    await deploy(runner, { 'bad/crash': CRASH, 'bad/gated': GATED, 'bad/echo': ECHO });
    // A crash shared by two services in flight: each then runs on probation, in a process alone.
    const first = runner.invoke(request('bad/gated'));
    await waitFor('the first call waiting on the host', () => gate.waiting.length === 1);
    expect(await code(runner.invoke(request('bad/crash')))).toBe('SANDBOX_CRASHED');
    expect(await code(first)).toBe('SANDBOX_CRASHED');
    await waitFor("bad's home and two probation processes", () => runner!.pids().length === 4);
    const second = runner.invoke(request('bad/gated'));
    await waitFor('the call on probation waiting on the host', () => gate.waiting.length === 2);
    // Its home (the first of bad's processes) goes down: the callee's only other place is the caller's process.
    const home = runner.pids()[1]!;
    process.kill(home, 'SIGKILL');
    await waitFor('the home to be gone', () => !runner!.pids().includes(home));
    const callee = runner.invoke(request('bad/echo'), { caller: gate.callers[1]!, timeoutMs: 10_000, depth: 1 });
    expect(await code(callee)).toBe('ok');
    gate.release();
    expect(await code(second)).toBe('ok');
  });

  it('in the shared processes a service that keeps crashing is quarantined as before; the other tenants go on', async () => {
    runner = await startRunner({ workers: 1, tenantWorkers: 1 });
    await runner.setTenants([tenant('a'), tenant('b')]);
    await deploy(runner, { 'a/crash': CRASH, 'b/echo': ECHO });
    for (let i = 0; i < 3; i++) {
      expect(await code(runner.invoke(request('a/crash')))).toBe('SANDBOX_CRASHED');
      await waitFor('the shared process to serve again', async () => (await code(runner!.invoke(request('b/echo')))) === 'ok');
    }
    expect(runner.quarantineOf('a/crash')).toMatch(/crashed its sandbox process 3 times/);
    expect(await code(runner.invoke(request('a/crash')))).toBe('SERVICE_QUARANTINED');
    expect(runner.stats().quarantined).toEqual(['a/crash']);
    expect(runner.stats().calls).toContainEqual({ service: 'a/crash', outcome: 'crashed', count: 3 });
  });

  it("in a tenant's own processes a crash shared by its services strikes each, so the culprit's next crash quarantines it; the others serve on", async () => {
    const gate = new Gate();
    runner = await startRunner({ workers: 1, tenantWorkers: 1, hostCall: gate.hostCall });
    await runner.setTenants([tenant('bad', { processes: 1 })]);
    await deploy(runner, { 'bad/crash': CRASH, 'bad/gated': GATED });
    const inFlight = runner.invoke(request('bad/gated'));
    await waitFor('the call waiting on the host', () => gate.waiting.length === 1);
    expect(await code(runner.invoke(request('bad/crash')))).toBe('SANDBOX_CRASHED');
    expect(await code(inFlight)).toBe('SANDBOX_CRASHED');
    expect(runner.quarantineOf('bad/crash')).toBeUndefined();
    // Alone on probation now: its second crash within 60 s is its last (three in the platform's or the shared processes).
    expect(await code(runner.invoke(request('bad/crash')))).toBe('SANDBOX_CRASHED');
    expect(runner.quarantineOf('bad/crash')).toMatch(/crashed its sandbox process 2 times within 60 s/);
    expect(await code(runner.invoke(request('bad/crash')))).toBe('SERVICE_QUARANTINED');
    // The service that only shared the first crash keeps its one strike and serves.
    expect(runner.quarantineOf('bad/gated')).toBeUndefined();
    const again = runner.invoke(request('bad/gated'));
    await waitFor('the call waiting on the host again', () => gate.waiting.length === 2);
    gate.release();
    expect(await code(again)).toBe('ok');
    expect(runner.stats().calls).toContainEqual({ service: 'bad/crash', outcome: 'crashed', count: 2 });
  });

  it("a tenant that changes `processes` moves with its services; groups nobody needs stop", async () => {
    runner = await startRunner({ workers: 1, tenantWorkers: 1 });
    await runner.setTenants([tenant('acme')]);
    await deploy(runner, { 'acme/echo': ECHO, echo: ECHO });
    expect(runner.pids()).toHaveLength(2);
    await runner.setTenants([tenant('acme', { processes: 2 })]);
    // Its services moved before setTenants resolved; the shared process stops once it has no call.
    expect(await code(runner.invoke(request('acme/echo')))).toBe('ok');
    await waitFor('the shared process to stop', () => runner!.pids().length === 3);
    await runner.setTenants([tenant('acme')]);
    expect(await code(runner.invoke(request('acme/echo')))).toBe('ok');
    await waitFor('its own processes to stop', () => runner!.pids().length === 2);
    // A removed tenant's services are undeployed by the kernel; the shared process goes with the last.
    await runner.setTenants([]);
    expect(runner.pids()).toHaveLength(2);
    runner.undeploy('acme/echo');
    await waitFor('the shared process to stop', () => runner!.pids().length === 1);
    expect(await code(runner.invoke(request('acme/echo')))).toBe('SERVICE_NOT_DEPLOYED');
    expect(await code(runner.invoke(request('echo')))).toBe('ok');
    expect(runner.stats().calls).toContainEqual({ service: 'acme/echo', outcome: 'ok', count: 2 });
  });

  it('a call in flight in a group a tenant leaves is answered there', async () => {
    const gate = new Gate();
    runner = await startRunner({ workers: 1, tenantWorkers: 1, hostCall: gate.hostCall });
    await runner.setTenants([tenant('acme', { processes: 1 })]);
    await deploy(runner, { 'acme/gated': GATED });
    const running = runner.invoke(request('acme/gated'));
    await waitFor('the call to wait on the host', () => gate.waiting.length === 1);
    await runner.setTenants([tenant('acme', { processes: 0 })]);
    expect(runner.pids()).toHaveLength(3);
    gate.release();
    expect(await code(running)).toBe('ok');
    await waitFor('the old process to stop', () => runner!.pids().length === 2);
  });

  it.runIf(process.platform === 'linux')("without demotion (tenant_demote_cores 0) tenants' processes run their isolates below the kernel's CPU priority from the start (nice 19, every thread); the platform's at the normal one", async () => {
    runner = await startRunner({ workers: 1, tenantWorkers: 1 });
    const [platformPid] = runner.pids();
    await runner.setTenants([tenant('acme'), tenant('own', { processes: 1 })]);
    await deploy(runner, { echo: ECHO, 'acme/echo': ECHO, 'own/echo': ECHO });
    for (const name of ['echo', 'acme/echo', 'own/echo']) expect(await code(runner.invoke(request(name)))).toBe('ok');
    const tenants = runner.pids().filter((pid) => pid !== platformPid);
    expect(tenants).toHaveLength(2);
    for (const pid of tenants) {
      const threads = niceOf(pid);
      // Every thread: the main one, isolated-vm's, and those that ran before the process lowered
      // itself (V8's platform workers, which collect the isolates' garbage; libuv's).
      expect(threads.length).toBeGreaterThan(4);
      expect(threads.filter((t) => t.nice !== 19)).toEqual([]);
    }
    const platform = niceOf(platformPid!);
    expect(platform.filter((t) => t.nice !== 0)).toEqual([]);
  });

  it.runIf(process.platform === 'linux')("with demotion, a tenant's own process whose isolates keep meeting their memory limit is lowered, every thread, though it spends little CPU; another tenant's stays", async () => {
    // A bar no process here reaches: only the memory limits can lower it.
    runner = await startRunner({ workers: 1, tenantWorkers: 1, demoteAboveCores: 50 });
    const [platformPid] = runner.pids();
    // One group at a time: the order of pids() across groups started together is not fixed.
    const bomber = tenant('bomber', { processes: 1, quotas: { memory_mb: 16 } });
    await runner.setTenants([bomber]);
    const bomberPid = runner.pids().find((p) => p !== platformPid)!;
    await runner.setTenants([bomber, tenant('calm', { processes: 1 })]);
    const calmPid = runner.pids().find((p) => p !== platformPid && p !== bomberPid)!;
    await deploy(runner, { 'bomber/hoard': HOARD, 'bomber/echo': ECHO, 'calm/echo': ECHO });
    expect(await code(runner.invoke(request('calm/echo')))).toBe('ok');
    expect(await code(runner.invoke(request('bomber/echo')))).toBe('ok');
    for (const pid of [bomberPid!, calmPid!]) expect(niceOf(pid).filter((t) => t.nice !== 0)).toEqual([]);
    // Met twice: a service may meet its limit now and then; still the normal priority.
    for (let i = 0; i < 2; i++) expect(await code(runner.invoke(request('bomber/hoard', { n: 300_000 })))).toBe('SERVICE_MEMORY_LIMIT');
    expect(niceOf(bomberPid!).filter((t) => t.nice !== 0)).toEqual([]);
    // The third within the window: lowered, every thread.
    expect(await code(runner.invoke(request('bomber/hoard', { n: 300_000 })))).toBe('SERVICE_MEMORY_LIMIT');
    await waitFor('the bomber lowered', () => niceOf(bomberPid!).every((t) => t.nice === 19));
    expect(niceOf(calmPid!).filter((t) => t.nice !== 0)).toEqual([]);
    // It still answers, below the others.
    expect(await code(runner.invoke(request('bomber/echo')))).toBe('ok');
  });

  it.runIf(process.platform === 'linux')("with demotion, a tenant's own processes start at the normal priority (the shared ones low); a busy one is lowered, every thread, and after a death its group's next process starts low", async () => {
    // A low bar: the test files running beside this one may leave a spinning thread a small part
    // of a core (under CI's full suite, not 0.2 of one for 20 s), while an idle process (its
    // timers) uses a few ms a second.
    runner = await startRunner({ workers: 1, tenantWorkers: 1, demoteAboveCores: 0.08 });
    const [platformPid] = runner.pids();
    // One group at a time: the order of pids() across groups started together is not fixed.
    await runner.setTenants([tenant('shared')]);
    const sharedPid = runner.pids().find((p) => p !== platformPid)!;
    await runner.setTenants([tenant('shared'), tenant('busy', { processes: 1 })]);
    const busyPid = runner.pids().find((p) => p !== platformPid && p !== sharedPid)!;
    await runner.setTenants([tenant('shared'), tenant('busy', { processes: 1 }), tenant('calm', { processes: 1 })]);
    const calmPid = runner.pids().find((p) => p !== platformPid && p !== sharedPid && p !== busyPid)!;
    await deploy(runner, { 'busy/spin': SPIN, 'busy/crash': CRASH, 'calm/echo': ECHO, 'shared/echo': ECHO });
    expect(await code(runner.invoke(request('shared/echo')))).toBe('ok');
    // calm answers a few calls (its isolate built on the first): light work keeps the normal priority.
    for (let i = 0; i < 3; i++) expect(await code(runner.invoke(request('calm/echo')))).toBe('ok');
    for (const pid of [busyPid!, calmPid!]) expect(niceOf(pid).filter((t) => t.nice !== 0)).toEqual([]);
    // The processes tenants share run low from the start: the OS cannot tell one tenant's work there from another's.
    expect(niceOf(sharedPid!).filter((t) => t.nice !== 19)).toEqual([]);
    // Calls that spin a core (what the machine spares of one) one after another, until busy is lowered: past 0.08 cores over a second.
    const until = Date.now() + 20_000;
    const lowered = () => niceOf(busyPid!).every((t) => t.nice === 19);
    while (!lowered() && Date.now() < until) expect(await code(runner.invoke(request('busy/spin', { ms: 500 })))).toBe('ok');
    expect(lowered()).toBe(true);
    expect(niceOf(calmPid!).filter((t) => t.nice !== 0)).toEqual([]);
    // A crash: busy's next process starts low, before it runs anything.
    expect(await code(runner.invoke(request('busy/crash')))).toBe('SANDBOX_CRASHED');
    await waitFor("busy's process restarted", () => runner!.pids().length >= 4 && !runner!.pids().includes(busyPid!));
    const restarted = runner.pids().filter((p) => p !== calmPid && p !== platformPid && p !== sharedPid);
    expect(restarted.length).toBeGreaterThan(0);
    for (const pid of restarted) expect(niceOf(pid).filter((t) => t.nice !== 19)).toEqual([]);
    expect(niceOf(calmPid!).filter((t) => t.nice !== 0)).toEqual([]);
  });

  it('a service of a tenant not declared (yet) runs in the shared processes, never in the platform’s', async () => {
    runner = await startRunner({ workers: 1, tenantWorkers: 1 });
    await deploy(runner, { 'later/echo': ECHO });
    expect(runner.pids()).toHaveLength(2);
    expect(await code(runner.invoke(request('later/echo')))).toBe('ok');
    await runner.setTenants([tenant('later', { processes: 1 })]);
    await waitFor('the shared process to stop', () => runner!.pids().length === 2 && runner!.inFlight().length === 0);
    expect(await code(runner.invoke(request('later/echo')))).toBe('ok');
  });
});
