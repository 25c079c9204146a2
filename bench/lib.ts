import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

/** Seconds of load per measurement (after a 1 s warm-up). */
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100);

interface CannonResult {
  requests: { average: number };
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
type CannonOptions = { url: string; connections: number; duration: number; method?: string; body?: string; headers?: Record<string, string>; requests?: CannonRequest[] };
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: CannonOptions) => Promise<CannonResult>;

export interface Load {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export async function load(url: string, opts: Partial<Omit<CannonOptions, 'url'>> = {}): Promise<Load> {
  const o = { url, connections: CONNECTIONS, ...opts };
  await autocannon({ ...o, duration: 1 });
  const r = await autocannon({ ...o, duration: opts.duration ?? SECONDS });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors };
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

function startProcess(args: string[]): Promise<{ target: Omit<Target, 'dir'>; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROF] : []), '--import', 'tsx', SERVER, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
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
