import { spawn } from 'node:child_process';
import { isolatedVmEntry } from '../../kernel/sandbox/ivm.ts';
import { SANDBOX_NODE_FLAGS } from '../../kernel/sandbox/pool.ts';
import { readFileSync } from 'node:fs';
import { sandboxPids, CLK_TCK, CONNECTIONS, load, privateMb, procStat, pssMb, rssMb, SECONDS, withSvc, type CannonRequest, type Target } from '../lib.ts';

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

const namesOf = (count: number) => Array.from({ length: count }, (_, i) => `mem${String(i).padStart(2, '0')}`);
/** Service counts of the slope table, run with one sandbox process: as many isolates at work in it. */
const SLOPE_COUNTS = (process.env.BENCH_MEMORY_SLOPE ?? '1,3,5,7,10').split(',').filter(Boolean).map(Number);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Snapshot {
  kernel: number;
  sandboxes: number[];
  /** Private memory (USS) of each sandbox process: its RSS less the pages it shares (privateMb). */
  sandboxesPrivate: number[];
  /** Proportional set size of each sandbox process: its private pages and its share of the shared ones (pssMb). */
  sandboxesPss: number[];
}

function snapshot(t: Target): Snapshot {
  // Read afresh: an idle process that grew is replaced by a new one (recycle_idle_ms).
  const kernel = t.pids[0]!;
  const sandboxes = sandboxPids(kernel);
  return { kernel: rssMb([kernel]), sandboxes: sandboxes.map((p) => rssMb([p])), sandboxesPrivate: sandboxes.map((p) => privateMb([p])), sandboxesPss: sandboxes.map((p) => pssMb([p])) };
}

const peaks = (a: number[], b: number[]) => a.map((v, i) => Math.max(v, b[i] ?? 0));

function maxOf(a: Snapshot, b: Snapshot): Snapshot {
  return { kernel: Math.max(a.kernel, b.kernel), sandboxes: peaks(a.sandboxes, b.sandboxes), sandboxesPrivate: peaks(a.sandboxesPrivate, b.sandboxesPrivate), sandboxesPss: peaks(a.sandboxesPss, b.sandboxesPss) };
}

/** The floor of a sandbox process: node with a sandbox process's flags and isolated-vm loaded, nothing else. */
async function bareSandboxFloor(): Promise<{ rss: number; private: number }> {
  const code = `require(${JSON.stringify(isolatedVmEntry())}); setInterval(() => {}, 1000); process.stdout.write('up\\n')`;
  const child = spawn(process.execPath, [...SANDBOX_NODE_FLAGS, '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((r) => child.stdout!.once('data', () => r()));
  await sleep(1000);
  const floor = { rss: rssMb([child.pid!]), private: privateMb([child.pid!]) };
  child.kill('SIGKILL');
  return floor;
}

/** Runs a load while reading memory every 250 ms (`read`), keeping the higher of two readings (`higher`): the peak. */
async function peakUnderLoad<S>(url: string, requests: CannonRequest[], rate: number | undefined, read: () => S, higher: (a: S, b: S) => S): Promise<{ peak: S; rps: number; bad: number }> {
  let peak = read();
  const sampler = setInterval(() => (peak = higher(peak, read())), 250);
  try {
    const l = await load(url, { requests, ...(rate ? { overallRate: rate } : {}) });
    return { peak: higher(peak, read()), rps: l.rps, bad: l.non2xx + l.errors };
  } finally {
    clearInterval(sampler);
  }
}

interface ProcessMemory {
  rss: number;
  /** RssAnon: the process's own memory. */
  anon: number;
  /** RssFile: pages mapped from files, the node binary's chiefly, shared with every other node process. */
  file: number;
  pss: number;
}

/** VmRSS, RssAnon and RssFile of /proc/PID/status (one read), and PSS, MB. */
function processMemory(pid: number): ProcessMemory {
  let status = '';
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    /* the process is gone */
  }
  const mb = (field: string) => Math.round(Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) / 1024);
  return { rss: mb('VmRSS'), anon: mb('RssAnon'), file: mb('RssFile'), pss: pssMb([pid]) };
}

function deployment(count: number): { services: Record<string, string>; channel_rest: Array<Record<string, string>>; requests: CannonRequest[] } {
  const list = namesOf(count);
  const services: Record<string, string> = {};
  list.forEach((n, i) => (services[`${n}.ts`] = serviceCode(i)));
  return {
    services,
    channel_rest: list.map((n) => ({ name: n, url_path: `/${n}`, service: n, security: 'none' })),
    requests: list.map((n) => ({ method: 'GET', path: `/${n}` })),
  };
}

async function callEach(url: string, requests: CannonRequest[]): Promise<void> {
  for (const { path } of requests) {
    const res = await fetch(`${url}${path}`);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  }
}

/**
 * A sandbox process's memory under the fixed-rate load against how many isolates are at work in
 * it: one fresh server per service count with one sandbox process (`server.sandbox.workers: 1`,
 * so every service is at home there), every service called in turn. What a process holds
 * apart from its isolates is the intercept; what each isolate at work adds is the slope.
 */
async function slope(): Promise<void> {
  const rows: string[] = [];
  const points: Array<[number, number]> = [];
  for (const count of SLOPE_COUNTS) {
    const { services, channel_rest, requests } = deployment(count);
    await withSvc({ server: { sandbox: { workers: 1 } }, channel_rest }, services, async (t) => {
      await sleep(2000);
      await callEach(t.url, requests);
      const pids = sandboxPids(t.pids[0]!);
      const l = await peakUnderLoad(t.url, requests, FIXED_RATE, () => pids.map(processMemory), (a, b) => a.map((m, i) => (b[i]!.rss > m.rss ? b[i]! : m)));
      const peak = l.peak;
      for (const p of peak) points.push([count, p.rss]);
      rows.push(`| ${count} | ${peak.map((p) => p.rss).join(' / ')} | ${peak.map((p) => p.anon).join(' / ')} | ${peak.map((p) => p.file).join(' / ')} | ${peak.map((p) => p.pss).join(' / ')} | ${Math.round(l.rps)}${l.bad ? ` (${l.bad} non-2xx or errors)` : ''} |`);
    });
  }
  console.log(`\n### Memory: one sandbox process under ${FIXED_RATE} req/s against the isolates at work in it (peak MB)\n`);
  console.log('| services deployed, each called in turn | RSS | of it anonymous (RssAnon) | of it file-backed (RssFile) | PSS | req/s |');
  console.log('|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) console.log(r);
  if (points.length >= 2) {
    // Least squares over every process of every run.
    const n = points.length;
    const mx = points.reduce((a, [x]) => a + x, 0) / n;
    const my = points.reduce((a, [, y]) => a + y, 0) / n;
    const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
    const b = sxx ? points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / sxx : 0;
    const a = my - b * mx;
    const room = a >= 64 ? 'the process alone is past 64 MB' : b > 0 ? `64 MB is reached at ${((64 - a) / b).toFixed(1)} isolates at work` : 'isolates at work add nothing measurable';
    console.log(`\nFit: RSS ≈ ${a.toFixed(1)} MB + ${b.toFixed(2)} MB per isolate at work; ${room}.`);
  }
}

export async function run(): Promise<void> {
  if (SLOPE_COUNTS.length) await slope();
  const { services, channel_rest, requests } = deployment(SERVICES);
  const bare = await bareSandboxFloor();
  const rows: Array<{ moment: string; s: Snapshot; note?: string }> = [];
  await withSvc({ channel_rest }, services, async (t) => {
    await sleep(3000);
    rows.push({ moment: `idle, ${SERVICES} services deployed`, s: snapshot(t) });
    await callEach(t.url, requests);
    await sleep(1000);
    rows.push({ moment: 'after one call to each service', s: snapshot(t) });
    for (const rate of [FIXED_RATE, undefined]) {
      const l = await peakUnderLoad(t.url, requests, rate, () => snapshot(t), maxOf);
      const what = rate ? `${rate} req/s` : `as fast as it goes`;
      rows.push({ moment: `under load, ${what} (peak)`, s: l.peak, note: `${Math.round(l.rps)} req/s${l.bad ? `, ${l.bad} non-2xx or errors` : ''}` });
    }
    const before = sandboxPids(t.pids[0]!).join();
    await sleep(IDLE_AFTER_S * 1000);
    rows.push({ moment: `idle, ${IDLE_AFTER_S} s after the load`, s: snapshot(t) });
    await sleep((RECYCLED_AFTER_S - IDLE_AFTER_S) * 1000);
    const s = snapshot(t);
    const now = sandboxPids(t.pids[0]!);
    const replaced = now.length > 0 && before !== now.join();
    // What a replacement cost: the fresh processes' CPU since they started (start, deploy of every service), idle since.
    const cpuMs = now.map((p) => Math.round(((procStat(p)?.ticks ?? 0) * 1000) / CLK_TCK));
    rows.push({ moment: `idle, ${RECYCLED_AFTER_S} s after the load`, s, note: replaced ? `sandbox processes replaced (recycle_idle_ms); CPU of the fresh ones so far ${cpuMs.join(' / ')} ms` : 'no sandbox process replaced' });
  });
  console.log(`\n### Memory: ${SERVICES} small services, default config (RSS MB per process)\n`);
  console.log(`autocannon ${CONNECTIONS} connections, ${SECONDS} s per load (after 1 s of warm-up), all ${SERVICES} channels in turn; RSS sampled every 250 ms.\n`);
  console.log('| moment | kernel | sandbox processes | largest sandbox | sandbox processes, PSS | sandbox processes, private (USS) | total | note |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---|');
  for (const { moment, s, note } of rows) {
    const total = s.kernel + s.sandboxes.reduce((a, b) => a + b, 0);
    console.log(`| ${moment} | ${s.kernel} | ${s.sandboxes.join(' / ')} | ${Math.max(...s.sandboxes)} | ${s.sandboxesPss.join(' / ')} | ${s.sandboxesPrivate.join(' / ')} | ${total} | ${note ?? ''} |`);
  }
  console.log(`\nFloor of a sandbox process (\`node ${SANDBOX_NODE_FLAGS.join(' ')}\` with isolated-vm loaded, nothing else): ${bare.rss} MB RSS, ${bare.private} MB private.`);
  console.log('RSS counts the pages a process shares with others (the node binary\'s, in every svc process); the total sums RSS, so it counts them once per process. PSS: private pages plus each shared page divided among the processes that map it. Private (USS): pages no other process maps.');
}
