import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KERNEL_NODE_FLAGS, printGrid } from '../lib.ts';

/**
 * Scheduler lateness with 1,000 jobs on one node (SQLite), in a child process with the kernel's
 * Node flags as `svc start` runs. Two shapes: ticks spread over the interval (jitter), and every
 * job on the same tick (a burst, as many `0 * * * *` jobs make). For each run: how late its tick
 * was taken (the claim committed with the run queued) and how late its service started, from the
 * run history. Baseline in the same process and run: 1,000 bare Node timers set for the same
 * instants, how late they fire (the event loop's own floor under that load).
 */
const JOBS = Number(process.env.BENCH_SCHED_JOBS ?? 1_000);
const SECONDS = Number(process.env.BENCH_SCHED_SECONDS ?? 30);
const EVERY_S = 10;

const NOOP = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({}) });\n`;

interface Lateness {
  p50: number;
  p99: number;
  max: number;
  n: number;
}
type Shape = { shape: string; timers: Lateness; taken: Lateness; started: Lateness };

export async function run(): Promise<void> {
  const r = spawnSync(process.execPath, [...KERNEL_NODE_FLAGS, '--import', 'tsx', fileURLToPath(import.meta.url), 'child'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`scheduler bench failed with exit code ${r.status}`);
  const shapes = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Shape[];
  const cell = (l: Lateness) => `${l.p50.toFixed(1)} / ${l.p99.toFixed(1)} / ${l.max.toFixed(0)}`;
  printGrid(`Scheduler lateness, ${JOBS} jobs every ${EVERY_S} s on one node (SQLite), ${SECONDS} s per shape: p50 / p99 / max ms (goal: p99 taken ≤ 50 ms)`, ['shape', 'bare timers (baseline)', 'tick taken', 'service started', 'runs'], shapes.map((s) => [s.shape, cell(s.timers), cell(s.taken), cell(s.started), String(s.taken.n)]));
}

function lateness(xs: number[]): Lateness {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), max: s.at(-1) ?? NaN, n: s.length };
}

/** Bare timers for the ticks of the same jobs over the same span: the floor the event loop gives. */
async function bareTimers(ticksOf: (job: number, from: number, to: number) => number[], from: number, to: number): Promise<number[]> {
  const late: number[] = [];
  const pending: Promise<void>[] = [];
  for (let j = 0; j < JOBS; j++) {
    for (const due of ticksOf(j, from, to)) {
      pending.push(new Promise((resolve) => setTimeout(() => (late.push(Date.now() - due), resolve()), due - Date.now())));
    }
  }
  await Promise.all(pending);
  return late;
}

async function child(): Promise<void> {
  const pino = (await import('pino')).default;
  const { Kernel } = await import('../../kernel/kernel.ts');
  const { scheduleOf } = await import('../../plugins/scheduler/schedule.ts');
  const { jobSchema } = await import('../../plugins/scheduler/schema.ts');
  const out: Shape[] = [];
  for (const [shape, jitter] of [
    ['spread (jitter 10s)', '10s'],
    ['burst (one tick for all)', undefined],
  ] as const) {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-sched-'));
    mkdirSync(join(dir, 'services'));
    writeFileSync(join(dir, 'services', 'noop.ts'), NOOP);
    const jobs = Array.from({ length: JOBS }, (_, i) => ({ name: `j${i}`, service: 'noop', every: `${EVERY_S}s`, ...(jitter ? { jitter } : {}) }));
    writeFileSync(
      join(dir, 'svc.yaml'),
      JSON.stringify({
        server: { data_dir: join(dir, 'data'), services_dir: join(dir, 'services'), sandbox: { workers: 2 } },
        plugins: { 'use-queue': { config: { max_running: 8 } } },
        scheduler_job: jobs,
      }),
    );
    const kernel = await Kernel.create({ configPath: join(dir, 'svc.yaml'), logger: pino({ level: 'silent' }), env: { ...process.env, SVC_ADMIN_PORT: '0' } });
    try {
      // Counted from the first whole interval after start, for SECONDS.
      const from = (Math.floor(Date.now() / (EVERY_S * 1000)) + 1) * EVERY_S * 1000;
      const to = from + SECONDS * 1000;
      const schedules = jobs.map((j) => scheduleOf(jobSchema.parse(j), 'UTC'));
      const ticksOf = (job: number, a: number, b: number) => {
        const out: number[] = [];
        const s = schedules[job]!;
        for (let t = s.next(a - 1); t !== undefined && t < b; t = s.next(t)) out.push(t + s.jitterMs(t));
        return out;
      };
      // The timers run beside the scheduler for the first half (the same load), alone they would flatter it.
      const timers = await bareTimers(ticksOf, from, from + (to - from) / 2);
      await new Promise((r) => setTimeout(r, Math.max(0, to - Date.now() + 3_000)));
      const rows = await kernel.store.all<{ due_at: number; claimed_at: number; started_at: number | null; tick: number }>('SELECT tick, due_at, claimed_at, started_at FROM scheduler_run WHERE tick >= ? AND tick < ?', [from, to]);
      out.push({
        shape,
        timers: lateness(timers),
        taken: lateness(rows.map((r) => Number(r.claimed_at) - Number(r.due_at))),
        started: lateness(rows.filter((r) => r.started_at !== null).map((r) => Number(r.started_at) - Number(r.due_at))),
      });
    } finally {
      await kernel.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

if (process.argv[2] === 'child') {
  await child();
  process.exit(0);
}
