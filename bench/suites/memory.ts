import { spawn } from 'node:child_process';
import { isolatedVmEntry } from '../../kernel/sandbox/ivm.ts';
import { childPids, CLK_TCK, CONNECTIONS, load, privateMb, procStat, rssMb, SECONDS, withSvc, type CannonRequest, type Target } from '../lib.ts';

/**
 * Issue 14: resident memory (VmRSS) of the default server, kernel and each sandbox process, with
 * 20 small services deployed: idle, after one call to each, under load calling all of them, and
 * idle again after the load: once the isolates were dropped (idle_ms), and once the processes
 * that grew were replaced (recycle_idle_ms). The default config (2 sandbox processes), log level silent.
 */
const SERVICES = Number(process.env.BENCH_SERVICES ?? 20);
/** A fixed rate as well as the open one: RSS under load grows with the rate, and this one is comparable from run to run. */
const FIXED_RATE = Number(process.env.BENCH_MEMORY_RATE ?? 2000);
/** After the load: past the default idle_ms (30 s) and the default time limit (5 s) of the last calls. */
const IDLE_AFTER_S = Number(process.env.BENCH_MEMORY_IDLE_S ?? 40);
/** Then: past the default recycle_idle_ms (60 s), the 1 s the pool takes to look, and a fresh process's start. */
const RECYCLED_AFTER_S = Number(process.env.BENCH_MEMORY_RECYCLED_S ?? 70);

/** A few lines each, all different, so that each is its own module; their names spread over the home processes. */
function serviceCode(i: number): string {
  return [
    `import { service } from 'svc/sdk';`,
    `const greeting = 'hello from service ${i}';`,
    `export default service({`,
    `  handle: (ctx) => ({ greeting, n: ${i}, path: ctx.path }),`,
    `});`,
    '',
  ].join('\n');
}

const names = Array.from({ length: SERVICES }, (_, i) => `mem${String(i).padStart(2, '0')}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Snapshot {
  kernel: number;
  sandboxes: number[];
  /** Private memory (USS) of each sandbox process: its RSS less the pages it shares (privateMb). */
  sandboxesPrivate: number[];
}

function snapshot(t: Target): Snapshot {
  // Read afresh: an idle process that grew is replaced by a new one (recycle_idle_ms).
  const kernel = t.pids[0]!;
  const sandboxes = childPids(kernel);
  return { kernel: rssMb([kernel]), sandboxes: sandboxes.map((p) => rssMb([p])), sandboxesPrivate: sandboxes.map((p) => privateMb([p])) };
}

const peaks = (a: number[], b: number[]) => a.map((v, i) => Math.max(v, b[i] ?? 0));

function maxOf(a: Snapshot, b: Snapshot): Snapshot {
  return { kernel: Math.max(a.kernel, b.kernel), sandboxes: peaks(a.sandboxes, b.sandboxes), sandboxesPrivate: peaks(a.sandboxesPrivate, b.sandboxesPrivate) };
}

/** The floor of a sandbox process: `node --no-node-snapshot` with isolated-vm loaded and nothing else. */
async function bareSandboxFloor(): Promise<{ rss: number; private: number }> {
  const code = `require(${JSON.stringify(isolatedVmEntry())}); setInterval(() => {}, 1000); process.stdout.write('up\\n')`;
  const child = spawn(process.execPath, ['--no-node-snapshot', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((r) => child.stdout!.once('data', () => r()));
  await sleep(1000);
  const floor = { rss: rssMb([child.pid!]), private: privateMb([child.pid!]) };
  child.kill('SIGKILL');
  return floor;
}

/** Runs a load while sampling RSS and private memory every 250 ms; the peak of each process. */
async function underLoad(t: Target, requests: CannonRequest[], rate: number | undefined): Promise<{ peak: Snapshot; rps: number; bad: number }> {
  let peak = snapshot(t);
  const sampler = setInterval(() => (peak = maxOf(peak, snapshot(t))), 250);
  try {
    const l = await load(t.url, { requests, ...(rate ? { overallRate: rate } : {}) });
    return { peak: maxOf(peak, snapshot(t)), rps: l.rps, bad: l.non2xx + l.errors };
  } finally {
    clearInterval(sampler);
  }
}

export async function run(): Promise<void> {
  const services: Record<string, string> = {};
  names.forEach((n, i) => (services[`${n}.ts`] = serviceCode(i)));
  const channel_rest = names.map((n) => ({ name: n, url_path: `/${n}`, service: n, security: 'none' }));
  const bare = await bareSandboxFloor();
  const rows: Array<{ moment: string; s: Snapshot; note?: string }> = [];
  await withSvc({ channel_rest }, services, async (t) => {
    await sleep(3000);
    rows.push({ moment: `idle, ${SERVICES} services deployed`, s: snapshot(t) });
    for (const n of names) {
      const res = await fetch(`${t.url}/${n}`);
      if (res.status !== 200) throw new Error(`${n} answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    }
    await sleep(1000);
    rows.push({ moment: 'after one call to each service', s: snapshot(t) });
    const requests: CannonRequest[] = names.map((n) => ({ method: 'GET', path: `/${n}` }));
    for (const rate of [FIXED_RATE, undefined]) {
      const l = await underLoad(t, requests, rate);
      const what = rate ? `${rate} req/s` : `as fast as it goes`;
      rows.push({ moment: `under load, ${what} (peak)`, s: l.peak, note: `${Math.round(l.rps)} req/s${l.bad ? `, ${l.bad} non-2xx or errors` : ''}` });
    }
    const before = childPids(t.pids[0]!).join();
    await sleep(IDLE_AFTER_S * 1000);
    rows.push({ moment: `idle, ${IDLE_AFTER_S} s after the load`, s: snapshot(t) });
    await sleep((RECYCLED_AFTER_S - IDLE_AFTER_S) * 1000);
    const s = snapshot(t);
    const now = childPids(t.pids[0]!);
    const replaced = now.length > 0 && before !== now.join();
    // What a replacement cost: the fresh processes' CPU since they started (start, deploy of every service), idle since.
    const cpuMs = now.map((p) => Math.round(((procStat(p)?.ticks ?? 0) * 1000) / CLK_TCK));
    rows.push({ moment: `idle, ${RECYCLED_AFTER_S} s after the load`, s, note: replaced ? `sandbox processes replaced (recycle_idle_ms); CPU of the fresh ones so far ${cpuMs.join(' / ')} ms` : 'no sandbox process replaced' });
  });
  console.log(`\n### Memory: ${SERVICES} small services, default config (RSS MB per process)\n`);
  console.log(`autocannon ${CONNECTIONS} connections, ${SECONDS} s per load (after 1 s of warm-up), all ${SERVICES} channels in turn; RSS sampled every 250 ms.\n`);
  console.log('| moment | kernel | sandbox processes | largest sandbox | sandbox processes, private (USS) | total | note |');
  console.log('|---|---:|---:|---:|---:|---:|---|');
  for (const { moment, s, note } of rows) {
    const total = s.kernel + s.sandboxes.reduce((a, b) => a + b, 0);
    console.log(`| ${moment} | ${s.kernel} | ${s.sandboxes.join(' / ')} | ${Math.max(...s.sandboxes)} | ${s.sandboxesPrivate.join(' / ')} | ${total} | ${note ?? ''} |`);
  }
  console.log(`\nFloor of a sandbox process (\`node --no-node-snapshot\` with isolated-vm loaded, nothing else): ${bare.rss} MB RSS, ${bare.private} MB private.`);
  console.log('RSS counts the pages a process shares with others (the node binary\'s, in every svc process); the total sums RSS, so it counts them once per process. Private (USS): pages no other process maps.');
}
