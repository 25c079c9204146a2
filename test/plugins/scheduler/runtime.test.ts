import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { createSchedulerPlugin } from '../../../plugins/scheduler/plugin.ts';
import type { JobScheduler } from '../../../plugins/scheduler/runtime.ts';
import type { JobView, RunView } from '../../../plugins/scheduler/control.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { waitFor } from '../../helpers/wait.ts';

/**
 * The scheduler's runtime under an injected clock: ticks taken once, missed ticks by policy,
 * overlap policies, pause and resume, a restart between ticks, a clock set back. Runs go through
 * the real Use queue into real isolates.
 */

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);

/** Reports what it was given as its error, so the history shows it. */
const REPORT = `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => { throw new Error(JSON.stringify({ input: ctx.input, delivery: ctx.delivery, cid: ctx.cid })); } });
`;
const OK = `import { service, t } from 'svc/sdk';
export default service({ input: { n: t.integer({ default: 1 }) }, handle: (ctx) => ({ n: ctx.input.n }) });
`;
/** Busy for 1.5 s of real time: a run that is still going when the next tick comes. */
const SLOW = `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 10000 }, handle: () => { const end = Date.now() + 1500; while (Date.now() < end) {} return {}; } });
`;

let k: TestKernel | undefined;
let dir: string | undefined;
afterEach(async () => {
  await k?.close();
  k = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

interface Started {
  k: TestKernel;
  runtime: JobScheduler;
  clock: ManualClock;
}

async function start(jobs: string, opts: { clock?: ManualClock; dir?: string; services?: Record<string, string>; options?: string } = {}): Promise<Started> {
  const clock = opts.clock ?? new ManualClock(T0);
  let runtime: JobScheduler | undefined;
  k = await startKernel({
    dir: opts.dir,
    clock,
    config: `
plugins:
  scheduler: false
${opts.options ?? ''}
scheduler_job:
${jobs}
`,
    services: opts.services ?? { 'ok.ts': OK, 'report.ts': REPORT, 'slow.ts': SLOW },
    extraPlugins: [createSchedulerPlugin({ onRuntime: (r) => (runtime = r) })],
  });
  return { k, runtime: runtime!, clock };
}

const show = (s: Started, name: string) => s.k.kernel.runControl('job.show', { name, limit: 100 }) as Promise<JobView & { history: RunView[] }>;

/** Waits until the job's history satisfies `ok`; returns it, oldest first. */
async function history(s: Started, name: string, ok: (runs: RunView[]) => boolean): Promise<RunView[]> {
  return waitFor(`history of ${name}`, async () => {
    const runs = (await show(s, name)).history.reverse();
    return ok(runs) && runs;
  });
}

const settled = (r: RunView) => r.state === 'succeeded' || r.state === 'failed';

describe('scheduler runtime (injected clock)', () => {
  it('takes an interval tick once, when it falls, and runs it through the Use queue with ctx.delivery.source', async () => {
    const s = await start(`  - { name: report, service: report, every: 10s, input: { a: 1 }, delivery: { max_attempts: 1 } }`);
    await s.runtime.wake();
    expect((await show(s, 'report')).history).toEqual([]);
    s.clock.advance(10_000);
    await s.runtime.wake();
    await s.runtime.wake();
    const runs = await history(s, 'report', (r) => r.length === 1 && settled(r[0]!));
    expect(runs[0]).toMatchObject({ tick: new Date(T0 + 10_000).toISOString(), cause: 'schedule', state: 'failed', attempts: 1, missed: 0, lateMs: 0 });
    const seen = JSON.parse(/\{.*\}/.exec(runs[0]!.error!)![0]) as { input: unknown; delivery: Record<string, unknown>; cid: string };
    expect(seen.input).toEqual({ a: 1 });
    expect(seen.delivery).toMatchObject({ attempt: 1, cid: runs[0]!.cid, source: { kind: 'scheduler', name: 'report', at: new Date(T0 + 10_000).toISOString() } });
    // Its dead letter is in the job's queue, where `svc queue replay` finds it.
    const events = (await s.k.kernel.runControl('queue.list', { channel: 'scheduler:report', limit: 10 })) as Array<{ state: string; cid: string }>;
    expect(events).toEqual([expect.objectContaining({ state: 'dead', cid: runs[0]!.cid })]);
  });

  it('lists jobs with their next runs and last outcome', async () => {
    const s = await start(`  - { name: nightly, service: ok, cron: '30 2 * * *', timezone: Europe/Berlin }
  - { name: off, service: ok, every: 1h, enabled: false }`);
    const jobs = (await s.k.kernel.runControl('job.list', {})) as JobView[];
    expect(jobs.map((j) => [j.name, j.schedule, j.enabled, j.paused])).toEqual([
      ['nightly', 'cron 30 2 * * *', true, false],
      ['off', 'every 1h', false, false],
    ]);
    // 02:30 in Berlin (CEST, UTC+2) on the days after 2026-06-01 12:00 UTC.
    expect(jobs[0]!.nextRuns.slice(0, 2)).toEqual(['2026-06-02T00:30:00.000Z', '2026-06-03T00:30:00.000Z']);
    expect(jobs[1]!.nextRuns).toEqual([]);
    expect(jobs[0]!.lastRun).toBe(null);
  });

  it('missed: skip records the ticks that fell behind and runs only the one on time; a late one is not run', async () => {
    const s = await start(`  - { name: m, service: ok, every: 1m }
  - { name: late, service: ok, every: 5m }`);
    // 10 minutes 30 seconds pass with no wake (no node up): m's 10:00 tick is 30 s late, within misfire_after_ms.
    s.clock.advance(630_000);
    await s.runtime.wake();
    const m = await history(s, 'm', (r) => r.length === 2 && settled(r[1]!));
    expect(m.map((r) => [r.state, r.missed, r.tick])).toEqual([
      ['missed', 9, new Date(T0 + 540_000).toISOString()],
      ['succeeded', 0, new Date(T0 + 600_000).toISOString()],
    ]);
    expect(m[1]!.lateMs).toBe(30_000);
    // late's last tick (10:00) is 30 s late too, but its first (05:00) 5.5 min: it runs the 10:00 one only.
    const late = await history(s, 'late', (r) => r.length === 2);
    expect(late.map((r) => [r.state, r.missed])).toEqual([
      ['missed', 1],
      ['succeeded', 0],
    ]);
  });

  it('missed: run_once runs once for all ticks that fell while no node was up; skip runs none', async () => {
    const s = await start(`  - { name: once, service: ok, every: 5m, missed: run_once }
  - { name: skip, service: ok, every: 5m, missed: skip }`);
    s.clock.advance(12 * 60_000);
    await s.runtime.wake();
    const once = await history(s, 'once', (r) => r.length === 1 && settled(r[0]!));
    expect(once[0]).toMatchObject({ cause: 'catch_up', state: 'succeeded', missed: 2, tick: new Date(T0 + 600_000).toISOString() });
    const skip = await history(s, 'skip', (r) => r.length === 1);
    expect(skip[0]).toMatchObject({ state: 'missed', missed: 2, cid: null });
    // Then both go on from their next tick.
    s.clock.set(T0 + 900_000);
    await s.runtime.wake();
    await history(s, 'skip', (r) => r.length === 2 && r[1]!.state === 'succeeded' && r[1]!.tick === new Date(T0 + 900_000).toISOString());
  });

  it('several ticks due at once (back after 45 s): overlap skip runs the latest, queue runs each in turn', async () => {
    const s = await start(`  - { name: skip, service: ok, every: 10s }
  - { name: queue, service: ok, every: 10s, overlap: queue }`);
    s.clock.advance(45_000);
    await s.runtime.wake();
    const skip = await history(s, 'skip', (r) => r.length === 4 && settled(r[3]!));
    expect(skip.map((r) => r.state)).toEqual(['skipped', 'skipped', 'skipped', 'succeeded']);
    expect(skip[3]!.tick).toBe(new Date(T0 + 40_000).toISOString());
    expect(skip[0]!.error).toMatch(/a later tick was due at the same time/);
    const queue = await history(s, 'queue', (r) => r.length === 4 && r.every(settled));
    expect(queue.map((r) => r.state)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
  });

  it('overlap: skip declines a tick while the previous run goes on; queue runs it after', async () => {
    const s = await start(`  - { name: skip, service: slow, every: 10s, overlap: skip }
  - { name: queue, service: slow, every: 10s, overlap: queue }`);
    s.clock.advance(10_000);
    await s.runtime.wake();
    await history(s, 'queue', (r) => r[0]?.state === 'queued');
    s.clock.advance(10_000);
    await s.runtime.wake();
    const skip = await history(s, 'skip', (r) => r.length === 2 && settled(r[0]!));
    expect(skip.map((r) => r.state)).toEqual(['succeeded', 'skipped']);
    expect(skip[1]!.error).toMatch(/previous run was still going/);
    const queue = await history(s, 'queue', (r) => r.length === 2 && r.every(settled));
    expect(queue.map((r) => r.state)).toEqual(['succeeded', 'succeeded']);
    // The second started once the first had ended.
    expect(Date.parse(queue[1]!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(queue[0]!.endedAt!));
  }, 30_000);

  it('pause declines ticks on every node; resume goes on from the next tick without catching up', async () => {
    const s = await start(`  - { name: p, service: ok, every: 10s, missed: run_once }`);
    await s.k.kernel.runControl('job.pause', { name: 'p' });
    s.clock.advance(35_000);
    await s.runtime.wake();
    expect((await show(s, 'p')).paused).toBe(true);
    expect((await show(s, 'p')).history).toEqual([]);
    await s.k.kernel.runControl('job.resume', { name: 'p' });
    await s.runtime.wake();
    expect((await show(s, 'p')).history).toEqual([]);
    s.clock.set(T0 + 40_000);
    await s.runtime.wake();
    const runs = await history(s, 'p', (r) => r.length === 1 && settled(r[0]!));
    expect(runs[0]).toMatchObject({ tick: new Date(T0 + 40_000).toISOString(), missed: 0, state: 'succeeded' });
  });

  it('job run NAME runs it now, outside the schedule, once', async () => {
    const s = await start(`  - { name: r, service: ok, cron: '0 3 * * *' }`);
    const reply = (await s.k.kernel.runControl('job.run', { name: 'r' })) as { state: string; cid: string };
    expect(reply.state).toBe('queued');
    const runs = await history(s, 'r', (r) => r.length === 1 && settled(r[0]!));
    expect(runs[0]).toMatchObject({ cause: 'manual', state: 'succeeded', cid: reply.cid });
    await expect(s.k.kernel.runControl('job.run', { name: 'nope' })).rejects.toThrow(/No job named 'nope'/);
  });

  it('a restart between ticks neither repeats the tick taken before it nor loses the one due after it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-sched-restart-'));
    const clock = new ManualClock(T0);
    const jobs = `  - { name: r, service: ok, every: 1m }`;
    let s = await start(jobs, { clock, dir });
    clock.advance(60_000);
    await s.runtime.wake();
    await history(s, 'r', (r) => r.length === 1 && settled(r[0]!));
    await s.k.close();
    k = undefined;
    // Down for 40 s; back before the next tick, and again at the same instant as the tick taken.
    clock.advance(40_000);
    s = await start(jobs, { clock, dir });
    await s.runtime.wake();
    expect((await show(s, 'r')).history).toHaveLength(1);
    clock.set(T0 + 120_000);
    await s.runtime.wake();
    const runs = await history(s, 'r', (r) => r.length === 2 && r.every(settled));
    expect(runs.map((r) => r.tick)).toEqual([new Date(T0 + 60_000).toISOString(), new Date(T0 + 120_000).toISOString()]);
  });

  it('a clock set back runs no tick twice; the job goes on when the clock reaches its next tick', async () => {
    const s = await start(`  - { name: c, service: ok, every: 1m }`);
    s.clock.advance(60_000);
    await s.runtime.wake();
    await history(s, 'c', (r) => r.length === 1 && settled(r[0]!));
    s.clock.set(T0 - 3_600_000);
    await s.runtime.wake();
    s.clock.set(T0 + 60_000);
    await s.runtime.wake();
    expect((await show(s, 'c')).history).toHaveLength(1);
    s.clock.set(T0 + 120_000);
    await s.runtime.wake();
    await history(s, 'c', (r) => r.length === 2 && r.every(settled));
  });

  it('a changed schedule does not catch up ticks of the old one; a run in flight finishes', async () => {
    const s = await start(`  - { name: e, service: slow, every: 1m, missed: run_once }`);
    s.clock.advance(60_000);
    await s.runtime.wake();
    await history(s, 'e', (r) => r[0]?.state === 'queued');
    expect(await s.k.writeConfig(`
plugins:
  scheduler: false
scheduler_job:
  - { name: e, service: slow, every: 10m, missed: run_once }
`)).toBe(true);
    s.clock.advance(5 * 60_000);
    await s.runtime.wake();
    const runs = await history(s, 'e', (r) => r.length === 1 && settled(r[0]!));
    expect(runs[0]!.state).toBe('succeeded');
    s.clock.set(T0 + 600_000);
    await s.runtime.wake();
    await history(s, 'e', (r) => r.length === 2 && r[1]!.tick === new Date(T0 + 600_000).toISOString());
  }, 20_000);

  it('a job disabled while it runs: the run finishes, no tick is taken; enabled again, it owes nothing from while it was off', async () => {
    const config = (enabled: boolean) => `
plugins:
  scheduler: false
scheduler_job:
  - { name: d, service: slow, every: 1m, missed: run_once, enabled: ${enabled} }
`;
    const s = await start(`  - { name: d, service: slow, every: 1m, missed: run_once }`);
    s.clock.advance(60_000);
    await s.runtime.wake();
    await history(s, 'd', (r) => r[0]?.state === 'queued');
    expect(await s.k.writeConfig(config(false))).toBe(true);
    expect((await show(s, 'd')).nextRuns).toEqual([]);
    s.clock.advance(5 * 60_000);
    await s.runtime.wake();
    const runs = await history(s, 'd', (r) => r.length === 1 && settled(r[0]!));
    expect(runs[0]!.state).toBe('succeeded');
    // Ten minutes off: ticks older than the misfire threshold, but not missed: declined.
    s.clock.advance(5 * 60_000);
    expect(await s.k.writeConfig(config(true))).toBe(true);
    await s.runtime.wake();
    expect((await show(s, 'd')).history).toHaveLength(1);
    s.clock.set(T0 + 12 * 60_000);
    await s.runtime.wake();
    const after = await history(s, 'd', (r) => r.length === 2 && settled(r[1]!));
    expect(after[1]).toMatchObject({ tick: new Date(T0 + 12 * 60_000).toISOString(), cause: 'schedule', missed: 0 });
  }, 20_000);

  it('checks input against the service model: a bad one fails the run at once (dead-lettered, not retried)', async () => {
    const s = await start(`  - { name: bad, service: ok, every: 10s, input: { n: 'x' } }`);
    s.clock.advance(10_000);
    await s.runtime.wake();
    const runs = await history(s, 'bad', (r) => r.length === 1 && settled(r[0]!));
    expect(runs[0]).toMatchObject({ state: 'failed', attempts: 1 });
    expect(runs[0]!.error).toMatch(/BadRequest: field 'n' must be an integer/);
  });
});
