import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type AddressInfo } from 'node:net';
import { availableParallelism, homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { stringify } from 'yaml';

/** Seconds of load per measurement (after a 1 s warm-up). */
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100);

interface CannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}
/** One request of a mix; autocannon sends a connection's requests in this order, round and round. */
export interface CannonRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}
type CannonOptions = { url: string; connections: number; duration: number; overallRate?: number; method?: string; body?: string; headers?: Record<string, string>; requests?: CannonRequest[] };
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: CannonOptions) => Promise<CannonResult>;

export interface Load {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** Present when the load was metered (load()'s `meter.pids`). */
  cost?: Cost;
}

/** What the measured part of a load cost. */
export interface Cost {
  /** Requests (or messages) answered in the measured part. */
  count: number;
  /** CPU (user + system) of the server's processes per request, µs. */
  serverUs: number;
  /** The part of serverUs spent in the first of its processes (the one that serves HTTP). */
  mainUs: number;
  /** The part of mainUs spent on that process's main thread, its event loop (the rest: libuv's pool, V8's workers). */
  loopUs: number;
  /** CPU of this process, the load generator, per request, µs. */
  loaderUs: number;
  /** Peak RSS of the server's processes, sampled every 500 ms during the load, MB. */
  rssMb: number;
  /** Cores busy with neither the server nor this process meanwhile (other work on the machine: noise). */
  otherCores: number;
}

export interface Meter {
  /** The server's processes, whose CPU and RSS are read from /proc. */
  pids?: number[];
  /** Called when the measured part starts (after the warm-up). */
  onMeasure?: () => void;
  /** Seconds of load before the measured part (default 1). */
  warmup?: number;
}

export async function load(url: string, opts: Partial<Omit<CannonOptions, 'url'>> = {}, meter: Meter = {}): Promise<Load> {
  const o = { url, connections: CONNECTIONS, ...opts };
  await autocannon({ ...o, duration: meter.warmup ?? 1 });
  meter.onMeasure?.();
  const run = () => autocannon({ ...o, duration: opts.duration ?? SECONDS });
  const { result: r, cost } = meter.pids ? await metered(meter.pids, run, (res) => res.requests.total) : { result: await run(), cost: undefined };
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors, ...(cost ? { cost } : {}) };
}

/**
 * The same load spread over several servers (nodes behind a load balancer): `connections` split
 * evenly, one autocannon per URL, all at once; req/s summed, CPU metered over every node's processes.
 */
export async function loadSpread(urls: string[], opts: Partial<Omit<CannonOptions, 'url'>>, pids: number[]): Promise<Load> {
  const per = Math.max(1, Math.round((opts.connections ?? CONNECTIONS) / urls.length));
  const run = (duration: number) => Promise.all(urls.map((url) => autocannon({ ...opts, url, connections: per, duration })));
  await run(1);
  const { result: rs, cost } = await metered(pids, () => run(opts.duration ?? SECONDS), (all) => all.reduce((n, r) => n + r.requests.total, 0));
  return {
    rps: rs.reduce((n, r) => n + r.requests.average, 0),
    p50: median(rs.map((r) => r.latency.p50)),
    p99: Math.max(...rs.map((r) => r.latency.p99)),
    non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
    errors: rs.reduce((n, r) => n + r.errors, 0),
    cost,
  };
}

/** Runs work and meters it: CPU of `pids` (from /proc) and of this process, peak RSS of `pids`. */
export async function metered<T>(pids: number[], work: () => Promise<T>, count: (r: T) => number): Promise<{ result: T; cost: Cost }> {
  let rss = 0;
  const sampler = setInterval(() => (rss = Math.max(rss, rssMb(pids))), 500);
  const ticks = cpuTicks(pids);
  const mainTicks = cpuTicks(pids.slice(0, 1));
  const loopTicks = mainThreadTicks(pids[0]);
  const machine = machineBusyTicks();
  const cpu = process.cpuUsage();
  const start = performance.now();
  let result: T;
  try {
    result = await work();
  } finally {
    clearInterval(sampler);
  }
  const loader = process.cpuUsage(cpu);
  const seconds = (performance.now() - start) / 1000;
  const server = ((cpuTicks(pids) - ticks) * 1e6) / CLK_TCK;
  const main = ((cpuTicks(pids.slice(0, 1)) - mainTicks) * 1e6) / CLK_TCK;
  const loop = ((mainThreadTicks(pids[0]) - loopTicks) * 1e6) / CLK_TCK;
  const others = ((machineBusyTicks() - machine) * 1e6) / CLK_TCK - server - loader.user - loader.system;
  const n = Math.max(1, count(result));
  return {
    result,
    cost: { count: n, serverUs: server / n, mainUs: main / n, loopUs: loop / n, loaderUs: (loader.user + loader.system) / n, rssMb: rss || rssMb(pids), otherCores: Math.max(0, others / 1e6 / seconds) },
  };
}

/** A process's CPU affinity list as taskset prints it (`0,1`, `0-3`); undefined when taskset is missing or refuses. */
function affinityOf(pid: number): string | undefined {
  try {
    return execFileSync('taskset', ['-c', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split(':').pop()!.trim();
  } catch {
    return undefined;
  }
}

/** Sets the CPU affinity of every thread of a process; false when taskset is missing or refuses. */
function setAffinity(pid: number, cpus: string): boolean {
  try {
    execFileSync('taskset', ['-a', '-c', '-p', cpus, String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs work with the server processes `pids` on CPU 0 and this process (the load generator) on
 * the machine's last CPU, then puts every affinity back as it was. Why not, when the machine has
 * a single CPU or taskset is missing or not permitted. Processes started later by a pinned one
 * inherit its CPU.
 */
export async function onOwnCores<T>(pids: number[], work: () => Promise<T>): Promise<T | string> {
  const cpus = availableParallelism();
  if (cpus < 2) return 'the machine has one CPU';
  const before = new Map<number, string>();
  for (const pid of [process.pid, ...pids]) {
    const mask = affinityOf(pid);
    if (mask === undefined) return 'taskset is missing or may not read CPU affinities';
    before.set(pid, mask);
  }
  try {
    if (!setAffinity(process.pid, String(cpus - 1))) return 'taskset may not set CPU affinities';
    for (const pid of pids) if (!setAffinity(pid, '0')) return `taskset may not set the CPU affinity of process ${pid}`;
    return await work();
  } finally {
    for (const [pid, mask] of before) setAffinity(pid, mask);
  }
}

/** Rounds per measured case; each case keeps its best round (a 2-core machine is noisy, and order matters). */
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/**
 * Measures several cases in turn, ROUNDS times, interleaved (so a slow spell hits every case
 * alike), and keeps each case's best round.
 */
export async function interleaved(cases: Array<() => Promise<Load>>): Promise<Load[]> {
  const best: Array<Load | undefined> = cases.map(() => undefined);
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < cases.length; i++) {
      const l = await cases[i]!();
      if (!best[i] || l.rps > best[i]!.rps) best[i] = l;
    }
  }
  return best as Load[];
}

/** The middle value (mean of the two middle ones for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * The lowest and highest of one round's ratio to the same round's baseline (`ratios[round]`),
 * as `0.55–0.63`: how far a ratio moves between rounds of one run on this machine, beside the
 * ratio of medians the tables lead with.
 */
export function roundSpread(values: readonly number[], baseline: readonly number[]): string {
  const ratios = values.map((v, r) => v / baseline[r]!);
  return `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`;
}

/**
 * Measures several cases ROUNDS times, interleaved, each round starting one case later (so no
 * case always runs right after the same neighbour); results[case][round], for medians.
 */
export async function rounds<T>(cases: Array<() => Promise<T>>): Promise<T[][]> {
  const out: T[][] = cases.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < cases.length; k++) {
      const i = (round + k) % cases.length;
      out[i]!.push(await cases[i]!());
    }
  }
  return out;
}

/** Clock ticks per second of /proc/PID/stat's utime and stime. */
export const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** Parent pid and CPU time so far (utime + stime, clock ticks) from /proc/PID/stat. */
export function procStat(pid: number | string): { ppid: number; ticks: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid … utime stime …": comm may hold spaces and parentheses, so split after the last ')'.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) };
}

/**
 * How many times a process's main thread has gone to sleep and been woken so far (its voluntary
 * context switches, /proc/PID/status): a timer that fires, a socket that becomes readable. 0 once it is gone.
 */
export function mainThreadWakeups(pid: number): number {
  try {
    return Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** A process and its descendants (parents from /proc/PID/stat). */
export function processTree(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (/^\d+$/.test(name)) parent.set(Number(name), procStat(name)?.ppid ?? 0);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parent) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/** The processes' names (/proc/PID/comm), counted: `node ×3 + esbuild`. */
export function describeProcesses(pids: number[]): string {
  const names = new Map<string, number>();
  for (const pid of pids) {
    let comm = '?';
    try {
      comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      /* gone */
    }
    names.set(comm, (names.get(comm) ?? 0) + 1);
  }
  return [...names].map(([name, n]) => (n > 1 ? `${name} ×${n}` : name)).join(' + ');
}

/** The first process whose /proc/PID/comm is `comm`. */
export function findProcess(comm: string): number | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/comm`, 'utf8').trim() === comm) return Number(name);
    } catch {
      /* gone */
    }
  }
  return undefined;
}

/** Busy clock ticks of the whole machine so far (first line of /proc/stat, less idle and iowait). */
export function machineBusyTicks(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is counted in user already)
  return f.slice(0, 8).reduce((a, b) => a + b, 0) - f[3]! - f[4]!;
}

function cpuTicks(pids: number[]): number {
  return pids.reduce((sum, pid) => sum + (procStat(pid)?.ticks ?? 0), 0);
}

/** CPU ticks of a process's main thread (its task whose id is the pid): for Node, the event loop. */
function mainThreadTicks(pid: number | undefined): number {
  return pid === undefined ? 0 : (procStat(`${pid}/task/${pid}`)?.ticks ?? 0);
}

/** Sum of /proc/PID/smaps_rollup lines matching `field` over processes, MB. */
function rollupMb(pids: number[], field: RegExp): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      for (const m of rollup.matchAll(field)) kb += Number(m[1]);
    } catch {
      /* the process is gone */
    }
  }
  return Math.round(kb / 1024);
}

/**
 * Private memory (USS) of processes, MB: resident pages no other process maps
 * (Private_Clean + Private_Dirty of /proc/PID/smaps_rollup), what the machine gets back when a
 * process exits. RSS also counts pages shared with other processes: the node binary's, 33–41 MB
 * of each svc process (more under load), are counted again in the kernel and in every sandbox process.
 */
export function privateMb(pids: number[]): number {
  return rollupMb(pids, /^Private_(?:Clean|Dirty):\s+(\d+) kB/gm);
}

/** Proportional set size (PSS) of processes, MB: private pages, plus each shared page divided by the number of processes mapping it. */
export function pssMb(pids: number[]): number {
  return rollupMb(pids, /^Pss:\s+(\d+) kB/gm);
}

/** The sandbox processes of a kernel, as they are now: the processes under it (its spawner's children, kernel/sandbox/spawner.ts) running the worker bundle. */
export function sandboxPids(kernel: number): number[] {
  return processTree(kernel)
    .slice(1)
    .filter((pid) => {
      try {
        return /svc-sandbox-[^/]+\/worker\.mjs/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
      } catch {
        return false;
      }
    });
}

/** Resident memory of processes, MB. */
export function rssMb(pids: number[]): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      kb += Number(m?.[1] ?? 0);
    } catch {
      /* the process is gone */
    }
  }
  return Math.round(kb / 1024);
}

export interface Target {
  url: string;
  pids: number[];
  dir: string | undefined;
}

const SERVER = fileURLToPath(new URL('./server.ts', import.meta.url));

/** A bench/server.ts target (`bare`, `svc FILE`, `upstream`, `proxy URL`) in its own process, until stop(). */
export function startProcess(args: string[]): Promise<{ target: Omit<Target, 'dir'>; stop: () => Promise<void> }> {
  const kernelFlags = args[0] === 'svc' ? KERNEL_NODE_FLAGS : [];
  const child = spawn(process.execPath, [...kernelFlags, ...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROF] : []), '--import', 'tsx', SERVER, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /READY (\S+) (\S+)/.exec(out);
      if (m) resolve({ target: { url: m[1]!, pids: m[2]!.split(',').map(Number) }, stop: () => new Promise<void>((r) => (child.once('exit', () => r()), child.kill('SIGTERM'))) });
    });
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}: ${out}`)));
  });
}

/** Runs fn against a bench/server.ts target of the given kind (upstream, proxy) in its own process. */
export async function withTarget<T>(kind: string, arg: string | undefined, fn: (t: Target) => Promise<T>): Promise<T> {
  const { target, stop } = await startProcess(arg === undefined ? [kind] : [kind, arg]);
  try {
    return await fn({ ...target, dir: undefined });
  } finally {
    await stop();
  }
}

/** Runs fn against bare Fastify hello-world in its own process. */
export async function withBareFastify<T>(fn: (t: Target) => Promise<T>): Promise<T> {
  const { target, stop } = await startProcess(['bare']);
  try {
    return await fn({ ...target, dir: undefined });
  } finally {
    await stop();
  }
}

/** Runs fn against an svc server (its own process) with this config and these services. */
export async function withSvc<T>(config: Record<string, unknown>, services: Record<string, string>, fn: (t: Target) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  mkdirSync(join(dir, 'services'));
  for (const [file, code] of Object.entries(services)) writeFileSync(join(dir, 'services', file), code);
  const server = { port: 0, log_level: 'silent', ...((config.server as object) ?? {}), data_dir: join(dir, 'data'), services_dir: join(dir, 'services') };
  writeFileSync(join(dir, 'svc.yaml'), stringify({ ...config, server }));
  const { target, stop } = await startProcess(['svc', join(dir, 'svc.yaml')]);
  try {
    return await fn({ ...target, dir });
  } finally {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface Row {
  name: string;
  load?: Load;
  value?: string;
  ratio?: number;
  rssMb?: number;
  note?: string;
}

export function printTable(title: string, rows: Row[], ratioLabel = 'ratio'): void {
  console.log(`\n### ${title}\n`);
  console.log(`| case | req/s | ${ratioLabel} | p50 ms | p99 ms | RSS MB | note |`);
  console.log('|---|---:|---:|---:|---:|---:|---|');
  for (const r of rows) {
    const rps = r.load ? Math.round(r.load.rps).toString() : (r.value ?? '');
    const errs = r.load && (r.load.non2xx || r.load.errors) ? ` (non-2xx ${r.load.non2xx}, errors ${r.load.errors})` : '';
    console.log(`| ${r.name} | ${rps} | ${r.ratio === undefined ? '' : r.ratio.toFixed(2)} | ${r.load?.p50 ?? ''} | ${r.load?.p99 ?? ''} | ${r.rssMb ?? ''} | ${(r.note ?? '') + errs} |`);
  }
}

/** A markdown table with these column heads (numbers right-aligned; the first column and `note` left). */
export function printGrid(title: string, head: string[], rows: string[][]): void {
  console.log(`\n### ${title}\n`);
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map((h, i) => (i === 0 || h === 'note' ? '---' : '---:')).join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

// ---------------------------------------------------------------------------------------------
// Servers started the way an operator would, and peers installed on demand
// ---------------------------------------------------------------------------------------------

export interface Running {
  url: string;
  pid: number;
  stop: () => Promise<void>;
}

/** A free TCP port on 127.0.0.1 (closed again; the server binds it right after). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * `node args…` with stdout and stderr appended to `log` (an operator redirecting to a file);
 * resolves once `probe` answers 2xx. stop() sends SIGTERM, SIGKILL after 10 s.
 */
export async function spawnLogged(args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; log: string; probe: string; headers?: Record<string, string>; node?: string }): Promise<Omit<Running, 'url'>> {
  const fd = openSync(opts.log, 'a');
  const child = spawn(opts.node ?? process.execPath, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let exited = false;
  const exit = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));
  const stop = async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exit;
    clearTimeout(kill);
  };
  for (let i = 0; i < 600 && !exited; i++) {
    try {
      const res = await fetch(opts.probe, { headers: opts.headers, signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.ok) return { pid: child.pid!, stop };
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`${args.join(' ')} did not answer ${opts.probe}; its output:\n${readFileSync(opts.log, 'utf8').slice(-4000)}`);
}

export const SVC_BIN = fileURLToPath(new URL('../bin/svc.js', import.meta.url));
/** The Node flags svc's kernel runs with: those of bin/svc.js's first line (`#!/usr/bin/env -S node …`), as `svc start` and `npm start` run it. */
export const KERNEL_NODE_FLAGS = readFileSync(SVC_BIN, 'utf8').split('\n', 1)[0]!.split(/\s+/).filter((a) => a.startsWith('--'));

/**
 * svc as an operator starts it: `node bin/svc.js start --config FILE` in a temp dir, output to
 * server.log there, log level and everything else from `config` (defaults when absent). Ready
 * once GET `probe` (a path) answers 2xx; stop() also removes the temp dir. `env`: more variables
 * for the kernel process (SVC_SANDBOX_PROGRAM, say). `services` are files under the services
 * directory, or elsewhere in the temp dir by a relative path (`../tenants/acme/orders.ts`).
 * `node`: the Node binary to run it with (another Node line than the bench's).
 */
export async function startSvcCli(config: Record<string, unknown>, services: Record<string, string>, probe: string, headers?: Record<string, string>, env: NodeJS.ProcessEnv = {}, node?: string): Promise<Running & { dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-cli-'));
  mkdirSync(join(dir, 'services'));
  for (const [file, code] of Object.entries(services)) {
    const path = join(dir, 'services', file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, code);
  }
  const port = await freePort();
  const server = { ...((config.server as object) ?? {}), port, data_dir: join(dir, 'data'), services_dir: join(dir, 'services') };
  writeFileSync(join(dir, 'svc.yaml'), stringify({ ...config, server }));
  const url = `http://127.0.0.1:${port}`;
  try {
    // BENCH_SVC_NODE_ARGS adds Node flags to the kernel process (diagnostics, e.g. --cpu-prof).
    const nodeArgs = process.env.BENCH_SVC_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    const p = await spawnLogged([...KERNEL_NODE_FLAGS, ...nodeArgs, SVC_BIN, 'start', '--config', join(dir, 'svc.yaml')], { cwd: dir, env: { ...process.env, SVC_ADMIN_PORT: '0', ...env }, log: join(dir, 'server.log'), probe: url + probe, headers, node });
    return { url, pid: p.pid, dir, stop: () => p.stop().finally(() => rmSync(dir, { recursive: true, force: true })) };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * A package that is not a project dependency, installed on demand into
 * ~/.cache/svc-bench/<folder> (once; reused when present). Returns its directory.
 */
export function cachedPackage(folder: string, name: string, spec: string): string {
  const prefix = join(homedir(), '.cache', 'svc-bench', folder);
  const dir = join(prefix, 'node_modules', name);
  if (existsSync(join(dir, 'package.json'))) return dir;
  mkdirSync(prefix, { recursive: true });
  // Without a package.json at the prefix, npm 11 installs nothing there.
  if (!existsSync(join(prefix, 'package.json'))) writeFileSync(join(prefix, 'package.json'), '{ "private": true }\n');
  console.error(`installing ${spec} into ${prefix} (once)`);
  const r = spawnSync('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', spec], { cwd: prefix, stdio: ['ignore', 2, 2] });
  if (r.status !== 0 || !existsSync(join(dir, 'package.json'))) throw new Error(`npm install ${spec} failed (exit ${r.status})`);
  return dir;
}

/** The `version` of a package.json. */
export function versionOf(packageDir: string): string {
  return (JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string }).version;
}

// ---------------------------------------------------------------------------------------------
// Rate limiting: rules that count every request and deny none
// ---------------------------------------------------------------------------------------------

/** Limits no load generator reaches, so every request is counted and admitted. */
const ADMIT_ALL = { rate: 1_000_000_000, burst: 1_000_000_000, limit: 1_000_000_000_000, limit_unit: 'day' };

/** 3 channel rate-limit rules of 2 ranges each; the client (any address) is counted by the last one and never denied. */
export const THREE_RATE_RULES = [
  { cidr_list: ['192.0.2.0/24', '2001:db8::/32'], time_range: [{ is_all_day: true, rate: 50 }, { time_from: '22:00', time_to: '06:00', rate: 5 }] },
  { cidr_list: ['198.51.100.0/24'], time_range: [{ is_all_day: true, limit: 10, limit_unit: 'minute' }, { time_from: '09:00', time_to: '17:00', rate: 5 }] },
  { cidr_list: [], time_range: [{ is_all_day: true, ...ADMIT_ALL }, { time_from: '03:00', time_to: '03:01', ...ADMIT_ALL }] },
];

// ---------------------------------------------------------------------------------------------
// Pub/sub: the config, message and requests of bench/pubsub.ts and the peers suite
// ---------------------------------------------------------------------------------------------

const basic = (user: string) => `Basic ${Buffer.from(`${user}:bench-password-1`).toString('base64')}`;

export const PUBSUB = {
  /** Endpoint ep.bench: publishes to /bench/*, subscribed to /bench/pub. */
  publisher: basic('bench'),
  /** Endpoint ep.reader: subscribed to /bench/flow. */
  reader: basic('reader'),
  message: { data: { order: 12345, customer: 'ACME', lines: [{ sku: 'X-1', qty: 2 }] } },
  config: {
    security: [
      { name: 'sec.bench', type: 'basic_auth', username: 'bench', password: 'bench-password-1' },
      { name: 'sec.reader', type: 'basic_auth', username: 'reader', password: 'bench-password-1' },
    ],
    pubsub_topic: [
      { name: '/bench/pub', max_depth: 10_000_000 },
      { name: '/bench/flow', max_depth: 10_000_000 },
    ],
    pubsub_endpoint: [
      { name: 'ep.bench', security: 'sec.bench', pub: ['/bench/*'], sub: ['/bench/*'] },
      { name: 'ep.reader', security: 'sec.reader', sub: ['/bench/flow'] },
    ],
    // Publish-only rows need a subscriber too, or every message would be retained in the topic.
    pubsub_subscription: [
      { endpoint: 'ep.bench', topics: ['/bench/pub'] },
      { endpoint: 'ep.reader', topics: ['/bench/flow'] },
    ],
  },
};

/**
 * The body of a publish (variant A: with `has_gd` as given). With `bytes`, PUBSUB.message's data
 * gains a `note` of spaces so the body is exactly that long: every peer then carries as many
 * bytes (RabbitMQ's message is publishBody('B', …), the same length).
 */
export function publishBody(variant: 'A' | 'B', gd: boolean, bytes?: number): string {
  const body = (note?: string) => JSON.stringify({ data: note === undefined ? PUBSUB.message.data : { ...PUBSUB.message.data, note }, ...(variant === 'A' ? { has_gd: gd } : {}) });
  if (bytes === undefined) return body();
  const pad = bytes - body('').length;
  if (pad < 0) throw new Error(`a publish body cannot be shorter than ${body('').length} bytes`);
  return body(' '.repeat(pad));
}

/** A publish of PUBSUB.message by ep.bench to `topic`, as autocannon options (variant A: `has_gd` as given; `bytes`: see publishBody). */
export function publishRequest(base: string, variant: 'A' | 'B', gd: boolean, topic: string, bytes?: number): { url: string; method: string; body: string; headers: Record<string, string> } {
  return {
    url: `${base}${variant === 'A' ? '/svc/pubsub/topic' : '/pubsub/topic'}${topic}`,
    method: 'POST',
    body: publishBody(variant, gd, bytes),
    headers: { authorization: PUBSUB.publisher, 'content-type': 'application/json' },
  };
}

/**
 * One get of the caller's subscription (A: of `topic`; B: of every topic); how many messages it took.
 * Through undici's request, not fetch: the getter shares the machine with svc, and fetch cost this
 * process 1.4–2.0 ms of CPU per get of 40 messages against 0.43–0.58 ms (2026-11-28).
 */
export function getter(base: string, variant: 'A' | 'B', auth: string, topic: string): () => Promise<number> {
  if (variant === 'A') {
    return async () => ((await (await request(`${base}/svc/pubsub/topic${topic}`, { method: 'PATCH', headers: { authorization: auth } })).body.json()) as unknown[]).length;
  }
  return async () => {
    const res = await request(`${base}/pubsub/messages/get`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: '{"max_messages":1000}' });
    return ((await res.body.json()) as { message_count: number }).message_count;
  };
}

/** Gets until the subscription is empty; the number of messages taken. */
export async function drain(get: () => Promise<number>): Promise<number> {
  let n = 0;
  for (let got = await get(); got > 0; got = await get()) n += got;
  return n;
}

/**
 * How long a getter waits after an empty get, as a polling consumer does. Without a pause, a
 * getter that has caught up asks again at once, and the row measures a storm of empty gets
 * rather than draining (BENCH_POLL_IDLE_MS=0 restores that).
 */
const POLL_IDLE_MS = Number(process.env.BENCH_POLL_IDLE_MS ?? 5);

/** One getter looping get() until stop(); taken() counts the messages so far. */
export function getterLoop(get: () => Promise<number>): { taken: () => number; stop: () => Promise<void> } {
  let running = true;
  let taken = 0;
  const loop = (async () => {
    while (running) {
      const n = await get();
      taken += n;
      if (n === 0) await new Promise((r) => (POLL_IDLE_MS > 0 ? setTimeout(r, POLL_IDLE_MS) : setImmediate(r)));
    }
  })();
  return {
    taken: () => taken,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
