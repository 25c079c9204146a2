/**
 * npm run soak: a long run of a channel mix at a fraction of peak while a hostile service
 * crashes its sandbox process every few seconds. Not run in CI.
 *
 *   npm run soak -- [--minutes 10] [--rate-fraction 0.8] [--crash-every 4] [--workers 2] [--json FILE] [--keep]
 *
 * 1. A temp dir with a config and services; `node bin/svc.js start --config …` as a child process.
 * 2. Peak: autocannon, the mix at 50 connections for 10 s (after 1 s of warm-up).
 * 3. Soak: the same mix at rate-fraction × peak (an open-loop, paced undici loop, so every
 *    response and every connection error is attributed to its request), while a second loop
 *    calls the hostile channel every crash-every seconds. A quarantine answer there makes the
 *    soak rewrite the hostile file (a redeploy), so crashes go on for the whole run.
 * 4. Every response is classified (see classify()); RSS and open fds of the server and its
 *    sandbox processes are sampled every second.
 * Exit code 1 when the server died or any 5xx other than a documented crash loss was seen.
 * Everything goes to 127.0.0.1 only; every loop stops by itself (count and time bounds).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Pool } from 'undici';
import { stringify } from 'yaml';
import { CLK_TCK, freePort, KERNEL_NODE_FLAGS, load, procStat, rssMb, sandboxPids as sandboxPidsOf, type CannonRequest } from './lib.ts';

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    'rate-fraction': { type: 'string', default: '0.8' },
    'crash-every': { type: 'string', default: '4' },
    workers: { type: 'string', default: '2' },
    json: { type: 'string' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (args.help) {
  console.log('npm run soak -- [--minutes 10] [--rate-fraction 0.8] [--crash-every 4] [--workers 2] [--json FILE] [--keep]');
  process.exit(0);
}
function num(name: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) {
    console.error(`--${name} must be a number from ${min} to ${max}, got ${value}`);
    process.exit(2);
  }
  return n;
}
const MINUTES = num('minutes', args.minutes!, 0.1, 24 * 60);
const RATE_FRACTION = num('rate-fraction', args['rate-fraction']!, 0.001, 2);
const CRASH_EVERY_S = num('crash-every', args['crash-every']!, 0.2, 3600);
const WORKERS = Math.round(num('workers', args.workers!, 1, 16));
const SOAK_MS = MINUTES * 60_000;
/** The start sample is taken after this warm-up: 30 s, or 10% of a shorter run. */
const WARMUP_MS = Math.min(30_000, SOAK_MS * 0.1);
const PEAK_SECONDS = 10;
const PEAK_CONNECTIONS = 50;
/** Connections of the soak loop; calls beyond them wait in undici's queue, up to MAX_INFLIGHT. */
const SOAK_CONNECTIONS = 50;
const MAX_INFLIGHT = 256;
/** A request without its answer after this long counts as a timeout. */
const REQUEST_TIMEOUT_MS = 10_000;
/** SIGTERM, then SIGKILL after this long. */
const KILL_AFTER_MS = 10_000;
/** Flat: end RSS within +15% of the post-warm-up start, end fds within ±10 of it. */
const RSS_FLAT_FACTOR = 1.15;
const FD_FLAT_DELTA = 10;

const SVC_BIN = fileURLToPath(new URL('../bin/svc.js', import.meta.url));
/** The pool starts sandbox processes from a bundle it writes to a temporary `svc-sandbox-*` folder. */
const SANDBOX_WORKER = /svc-sandbox-[^/]+\/worker\.mjs/;

// ---------------------------------------------------------------------------------------------
// The project: config, services, the request mix
// ---------------------------------------------------------------------------------------------

const PASSWORD = randomBytes(12).toString('base64url');
const basic = (user: string) => `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}`;
const TOPIC = '/soak/events';

const HOSTILE = `import { service } from 'svc/sdk';\n// Crashes its sandbox process: a V8 fatal error (invalid array length / heap), not an exception.\nexport default service({ handle: () => '1'.repeat(0xfffffff).split('') });\n`;

const SERVICES: Record<string, string> = {
  'echo.ts': `import { service, t } from 'svc/sdk';
export default service({
  input: { id: t.integer(), name: t.string(), qty: t.integer({ default: 1 }), tags: t.array({ optional: true }) },
  handle: (ctx) => ({ ...ctx.input, echoed: true }),
});
`,
  'xml.ts': `import { service } from 'svc/sdk';
export default service({
  handle(ctx) {
    const p = ctx.payload as { '@id'?: string; customer?: string; lines?: { line?: unknown[] } };
    return { '#root': 'ack', order: p['@id'] ?? '', customer: p.customer ?? '', lines: String(p.lines?.line?.length ?? 0) };
  },
});
`,
  'form.ts': `import { service, t } from 'svc/sdk';
export default service({
  input: { name: t.string(), qty: t.integer(), tags: t.array({ optional: true }) },
  handle: (ctx) => ({ name: ctx.input.name, qty: ctx.input.qty, tags: ctx.input.tags ?? [] }),
});
`,
  'cpu.ts': `import { service, t } from 'svc/sdk';
// Some CPU work: primes below n by trial division, and a string hash.
export default service({
  input: { n: t.integer({ default: 4000 }) },
  handle(ctx) {
    const n = Math.min(ctx.input.n, 50000);
    let primes = 0;
    for (let i = 2; i < n; i++) {
      let p = true;
      for (let d = 2; d * d <= i; d++) if (i % d === 0) { p = false; break; }
      if (p) primes++;
    }
    let h = 0;
    const s = 'soak-' + n;
    for (let i = 0; i < 2000; i++) h = (h * 31 + s.charCodeAt(i % s.length)) | 0;
    return { n, primes, h };
  },
});
`,
  'secure.ts': `import { service, t } from 'svc/sdk';
export default service({ input: { id: t.string() }, handle: (ctx) => ({ id: ctx.input.id, user: ctx.user?.username ?? null }) });
`,
  'limited.ts': `import { service } from 'svc/sdk';
export default service({ handle: () => ({ ok: true }) });
`,
  'hostile.ts': HOSTILE,
};

function config(dir: string, limitedRate: number): string {
  return stringify({
    server: {
      host: '127.0.0.1',
      data_dir: join(dir, 'data'),
      services_dir: join(dir, 'services'),
      log_level: 'warn',
      drain_timeout_ms: 5000,
      sandbox: { workers: WORKERS },
    },
    security: [
      { name: 'soak.user', type: 'basic_auth', username: 'soak.user', password: PASSWORD },
      { name: 'soak.pub', type: 'basic_auth', username: 'soak.pub', password: PASSWORD },
      { name: 'soak.sub', type: 'basic_auth', username: 'soak.sub', password: PASSWORD },
    ],
    channel_rest: [
      { name: 'echo', url_path: '/echo/{id}', service: 'echo', method: 'POST', data_format: 'json', security: 'none' },
      { name: 'xml', url_path: '/xml', service: 'xml', method: 'POST', data_format: 'xml', security: 'none', xml: { always_array: ['lines.line'] } },
      { name: 'form', url_path: '/form', service: 'form', method: 'POST', data_format: 'form', security: 'none' },
      { name: 'cpu', url_path: '/cpu', service: 'cpu', method: 'GET', security: 'none' },
      { name: 'secure', url_path: '/secure/{id}', service: 'secure', method: 'GET', security: 'soak.user' },
      {
        name: 'limited',
        url_path: '/limited',
        service: 'limited',
        method: 'GET',
        security: 'none',
        rate_limiting: [{ time_range: [{ is_all_day: true, rate: limitedRate, burst: limitedRate }] }],
      },
      { name: 'hostile', url_path: '/hostile', service: 'hostile', method: 'GET', security: 'none' },
    ],
    pubsub_topic: [{ name: TOPIC, max_depth: 1_000_000 }],
    pubsub_endpoint: [
      { name: 'soak.publisher', security: 'soak.pub', pub: ['/soak/*'] },
      { name: 'soak.subscriber', security: 'soak.sub', sub: ['/soak/*'] },
    ],
    pubsub_subscription: [{ endpoint: 'soak.subscriber', topics: [TOPIC] }],
  });
}

interface MixEntry extends CannonRequest {
  /** Row label in the report. */
  label: string;
  /** Statuses that count as a correct answer. */
  expect: number[];
  /** Served by a sandboxed service (so a sandbox crash may cost it). */
  sandboxed: boolean;
}

const JSON_CT = { 'content-type': 'application/json' };
const ORDER_XML = '<?xml version="1.0"?><order id="A-17"><customer>Zoë &amp; Co</customer><lines><line sku="X1" qty="2"/><line sku="X2" qty="1"/></lines></order>';

/** One round of the mix; autocannon (peak) and the soak loop both send it in this order. */
const MIX: MixEntry[] = [
  { label: 'echo (json, typed)', method: 'POST', path: '/echo/7', headers: JSON_CT, body: JSON.stringify({ name: 'Ann', qty: 3, tags: ['a', 'b'] }), expect: [200], sandboxed: true },
  { label: 'xml', method: 'POST', path: '/xml', headers: { 'content-type': 'application/xml' }, body: ORDER_XML, expect: [200], sandboxed: true },
  { label: 'form', method: 'POST', path: '/form', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'name=Zo%C3%AB+Li&qty=3&tags=a&tags=b', expect: [200], sandboxed: true },
  { label: 'cpu', method: 'GET', path: '/cpu?n=4000', expect: [200], sandboxed: true },
  { label: 'secure (basic auth)', method: 'GET', path: '/secure/42', headers: { authorization: basic('soak.user') }, expect: [200], sandboxed: true },
  { label: 'limited (rate limit)', method: 'GET', path: '/limited', expect: [200], sandboxed: true },
  { label: 'pubsub publish (A, GD)', method: 'POST', path: `/svc/pubsub/topic${TOPIC}`, headers: { ...JSON_CT, authorization: basic('soak.pub') }, body: JSON.stringify({ data: { order: 123, lines: [1, 2, 3] }, has_gd: true }), expect: [200], sandboxed: false },
  { label: 'echo (invalid → 400)', method: 'POST', path: '/echo/seven', headers: JSON_CT, body: JSON.stringify({ name: 'Ann' }), expect: [400], sandboxed: false },
  { label: 'pubsub get (A)', method: 'PATCH', path: `/svc/pubsub/topic${TOPIC}`, headers: { authorization: basic('soak.sub') }, expect: [200], sandboxed: false },
];
const PUBLISH = MIX.findIndex((m) => m.label.startsWith('pubsub publish'));
const GET = MIX.findIndex((m) => m.label.startsWith('pubsub get'));
const HOSTILE_ENTRY: MixEntry = { label: 'hostile (crashes)', method: 'GET', path: '/hostile', expect: [], sandboxed: true };

// ---------------------------------------------------------------------------------------------
// Classification
// ---------------------------------------------------------------------------------------------

/**
 * Documented crash losses: 503 answers whose `details` is exactly one of these, on a channel
 * whose service runs in a sandbox (kernel/errors.ts, kernel/sandbox/pool.ts):
 * - SANDBOX_CRASHED: the call was in flight on the sandbox process that died;
 * - SERVICE_UNAVAILABLE 'No sandbox process was ready in time': the call waited for a restarting
 *   process past its service's time limit plus the pool's margin.
 * Plus, on the hostile channel only, a 503 whose details match /quarantin/i (a service that
 * crashed its sandbox 3 times within 60 s is quarantined until its file changes).
 * Everything else with status ≥ 500 is an "other 5xx", whatever its text (e.g. a timeout
 * 'Service exceeded its time limit', 'Service is not deployed' after a restart, 'Queue is full').
 */
const CRASH_DETAILS = new Set(['Service sandbox crashed and was restarted', 'No sandbox process was ready in time']);
const QUARANTINE = /quarantin/i;

type Outcome = 'ok' | 'crash' | 'quarantine' | 'other5xx' | 'unexpected';

function detailsOf(text: string): string {
  try {
    const body = JSON.parse(text) as { details?: unknown };
    if (body && typeof body.details === 'string') return body.details;
  } catch {
    /* not JSON */
  }
  return text.length > 100 ? `${text.slice(0, 100)}…` : text || '(empty body)';
}

function classify(entry: MixEntry, status: number, text: string): { outcome: Outcome; details: string } {
  if (entry.expect.includes(status)) return { outcome: 'ok', details: '' };
  const details = detailsOf(text);
  if (status === 503 && entry.sandboxed && CRASH_DETAILS.has(details)) return { outcome: 'crash', details };
  if (status === 503 && entry === HOSTILE_ENTRY && QUARANTINE.test(details)) return { outcome: 'quarantine', details };
  return { outcome: status >= 500 ? 'other5xx' : 'unexpected', details: `${status} ${details}` };
}

/** Latency histogram, 0.1 ms buckets up to 20 s. */
class Histogram {
  private readonly buckets = new Uint32Array(200_001);
  count = 0;
  max = 0;
  record(ms: number): void {
    this.buckets[Math.min(200_000, Math.floor(ms * 10))]!++;
    this.count++;
    if (ms > this.max) this.max = ms;
  }
  percentile(p: number): number {
    if (!this.count) return 0;
    const want = Math.ceil(this.count * p);
    let seen = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      seen += this.buckets[i]!;
      if (seen >= want) return (i + 1) / 10;
    }
    return this.max;
  }
}

class Row {
  sent = 0;
  ok = 0;
  crash = 0;
  quarantine = 0;
  other5xx = 0;
  unexpected = 0;
  errors = 0;
  timeouts = 0;
  /** Connection errors and timeouts that happened after the server process had exited. */
  afterExit = 0;
  readonly detail = new Map<string, number>();
  readonly latency = new Histogram();
  constructor(readonly entry: MixEntry) {}
  note(kind: string, key: string): void {
    const k = `${kind}: ${key}`;
    this.detail.set(k, (this.detail.get(k) ?? 0) + 1);
  }
  response(status: number, text: string, ms: number): Outcome {
    const { outcome, details } = classify(this.entry, status, text);
    this[outcome]++;
    if (outcome === 'ok') this.latency.record(ms);
    else this.note(outcome === 'crash' || outcome === 'quarantine' ? 'crash loss' : outcome === 'other5xx' ? 'OTHER 5xx' : 'unexpected', details);
    return outcome;
  }
  error(err: unknown): void {
    const e = err as { code?: string; name?: string; message?: string };
    const code = e.code ?? e.name ?? 'Error';
    if (/TIMEOUT/i.test(code)) this.timeouts++;
    else this.errors++;
    if (serverExited) this.afterExit++;
    this.note(`${/TIMEOUT/i.test(code) ? 'timeout' : 'connection error'}${serverExited ? ' after the server exited' : ''}`, `${code}${e.message ? ` (${e.message.slice(0, 80)})` : ''}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The server process
// ---------------------------------------------------------------------------------------------

interface Server {
  proc: ChildProcess;
  pid: number;
  url: string;
  exited: Promise<void>;
  exit?: { code: number | null; signal: NodeJS.Signals | null; atMs: number };
  /** The last lines that are not pino JSON (Node's own fatal errors, V8 fatal errors of sandboxes), and the last lines. */
  odd: string[];
  tail: string[];
  sandboxDeaths: number;
}

/** Read through a function: callbacks set it, and TypeScript would keep an earlier narrowing. */
const exitOf = (s: Server): Server['exit'] => s.exit;

const t0 = performance.now();
const since = () => performance.now() - t0;

/** `node bin/svc.js start --config …` in the project dir; resolves once it answers HTTP. */
async function startServer(dir: string): Promise<Server> {
  const port = await freePort();
  const proc = spawn(process.execPath, [...KERNEL_NODE_FLAGS, SVC_BIN, 'start', '--config', join(dir, 'svc.yaml')], {
    cwd: dir,
    env: { ...process.env, SVC_PORT: String(port), SVC_ADMIN_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a terminal's Ctrl-C reaches only this script, which stops the load
    // and then the server (Ctrl-C sent to the sandbox processes directly would kill them under load).
    detached: true,
  });
  const log = createWriteStream(join(dir, 'server.log'));
  const server: Server = { proc, pid: proc.pid!, url: `http://127.0.0.1:${port}`, exited: new Promise((r) => proc.once('exit', () => r())), odd: [], tail: [], sandboxDeaths: 0 };
  proc.once('exit', (code, signal) => {
    server.exit = { code, signal, atMs: since() };
    serverExited = true;
  });
  let partial = '';
  const onData = (c: Buffer) => {
    log.write(c);
    const lines = (partial + c.toString()).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      if (!line) continue;
      server.tail.push(line);
      if (server.tail.length > 200) server.tail.shift();
      if (line.includes('sandbox process died')) server.sandboxDeaths++;
      if (!line.startsWith('{')) {
        server.odd.push(line);
        if (server.odd.length > 120) server.odd.shift();
      }
    }
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  proc.once('exit', () => log.end());
  // log_level warn hides the 'svc listening' line: probe until it answers (at most 60 s).
  for (let i = 0; i < 600 && !server.exit && !stopping; i++) {
    try {
      const res = await fetch(`${server.url}/svc/pubsub/openapi.json`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      return server;
    } catch {
      await sleep(100);
    }
  }
  proc.kill('SIGKILL');
  throw new Error(`server did not answer (${JSON.stringify(server.exit ?? 'no exit')}):\n${server.tail.join('\n')}`);
}

/** SIGTERM, then SIGKILL after KILL_AFTER_MS; then any sandbox process of ours still alive. */
async function stopServer(server: Server | undefined, sandboxPids: Set<number>): Promise<void> {
  if (server && !server.exit) {
    server.proc.kill('SIGTERM');
    const done = await Promise.race([server.exited.then(() => true), sleep(KILL_AFTER_MS).then(() => false)]);
    if (!done && !server.exit) {
      console.error(`server did not exit ${KILL_AFTER_MS / 1000} s after SIGTERM: SIGKILL`);
      server.proc.kill('SIGKILL');
      await Promise.race([server.exited, sleep(5_000)]);
    }
  }
  await sleep(500);
  for (const pid of sandboxPids) {
    if (SANDBOX_WORKER.test(readCmdline(pid))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// /proc sampling
// ---------------------------------------------------------------------------------------------

function readCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

function fdCount(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}


/** Busy and total clock ticks of the whole machine (first line of /proc/stat). */
function machineTicks(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - (f[4] ?? 0), total };
}

const TICKS_PER_S = CLK_TCK;

/**
 * CPU used over the soak, in cores: this process (the load generator), the server, its sandbox
 * processes (each one's ticks since it was first seen; a process that dies loses up to one
 * sample interval), and the whole machine (other engineers' work included).
 */
class CpuMeter {
  private readonly lastTicks = new Map<number, number>();
  private server = 0;
  private sandboxes = 0;
  private readonly gen0 = process.cpuUsage();
  private readonly machine0 = machineTicks();
  private readonly t0 = performance.now();
  constructor(private readonly serverPid: number) {
    this.lastTicks.set(serverPid, procStat(serverPid)?.ticks ?? 0);
  }
  update(sandboxPids: number[]): void {
    const add = (pid: number) => {
      const ticks = procStat(pid)?.ticks;
      if (ticks === undefined) return 0;
      const prev = this.lastTicks.get(pid);
      this.lastTicks.set(pid, ticks);
      return ticks - (prev ?? ticks);
    };
    this.server += add(this.serverPid);
    for (const pid of sandboxPids) this.sandboxes += add(pid);
  }
  cores(): { generator: number; server: number; sandboxes: number; machine: number; machine_cores: number } {
    const s = (performance.now() - this.t0) / 1000;
    const g = process.cpuUsage(this.gen0);
    const m = machineTicks();
    const cores = Number(readFileSync('/proc/cpuinfo', 'utf8').match(/^processor\s*:/gm)?.length ?? 1);
    const r = (x: number) => Math.round(x * 100) / 100;
    return {
      generator: r((g.user + g.system) / 1e6 / s),
      server: r(this.server / TICKS_PER_S / s),
      sandboxes: r(this.sandboxes / TICKS_PER_S / s),
      machine: r(((m.busy - this.machine0.busy) / Math.max(1, m.total - this.machine0.total)) * cores),
      machine_cores: cores,
    };
  }
}

interface Sample {
  atS: number;
  serverRssMb: number;
  serverFds: number;
  sandboxes: number;
  sandboxRssMb: number;
  sandboxFds: number;
}

function sample(serverPid: number, seen: Set<number>, cpu?: CpuMeter): Sample {
  const sb = sandboxPidsOf(serverPid);
  for (const p of sb) seen.add(p);
  cpu?.update(sb);
  return {
    atS: Math.round(since() / 100) / 10,
    serverRssMb: rssMb([serverPid]),
    serverFds: fdCount(serverPid),
    sandboxes: sb.length,
    sandboxRssMb: rssMb(sb),
    sandboxFds: sb.reduce((n, p) => n + fdCount(p), 0),
  };
}

/** A sample with every sandbox process up (one may be restarting after a crash): a few tries, 100 ms apart. */
async function fullSample(serverPid: number, seen: Set<number>): Promise<Sample> {
  let s = sample(serverPid, seen);
  for (let i = 0; i < 30 && s.sandboxes < WORKERS; i++) {
    await sleep(100);
    s = sample(serverPid, seen);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

let stopping = false;
let interrupted = false;
/** Set as soon as the server process's exit is seen. */
let serverExited = false;

/** Subscriber drain after the run: gets until the queue is empty (bounded). */
async function drain(url: string): Promise<{ got: number; redelivered: number }> {
  let got = 0;
  let redelivered = 0;
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${url}/svc/pubsub/topic${TOPIC}`, { method: 'PATCH', headers: { authorization: basic('soak.sub') }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const list = (await res.json()) as Array<{ delivery_count?: number }>;
    if (!Array.isArray(list) || list.length === 0) break;
    got += list.length;
    redelivered += list.filter((m) => (m.delivery_count ?? 0) > 0).length;
  }
  return { got, redelivered };
}

// ---------------------------------------------------------------------------------------------
// The soak
// ---------------------------------------------------------------------------------------------

interface HostileStats {
  calls: number;
  crashes: number;
  quarantines: number;
  redeploys: number;
  /** Answers that are neither (a 2xx would mean the service did not crash). */
  other: number;
  /** No answer: connection error or timeout. */
  noAnswer: number;
  /** Quarantine answers to the first call after a redeploy: the rewrite did not lift the quarantine. */
  stillQuarantined: number;
}

interface PubsubStats {
  received: number;
  redelivered: number;
}

/**
 * The paced mix: due = rate × elapsed; each tick sends what is due, at most MAX_INFLIGHT in
 * flight. When the loop falls more than 0.25 s of requests behind (server or generator too
 * slow), the excess is dropped from the schedule and counted as `notSent`, so it never bursts.
 */
async function soakLoad(url: string, rate: number, rows: Row[], pubsub: PubsubStats, durationMs: number, onTick: (elapsedMs: number) => void): Promise<{ sent: number; notSent: number; ms: number }> {
  const pool = new Pool(url, { connections: SOAK_CONNECTIONS, pipelining: 1, headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS });
  const maxTotal = Math.ceil((rate * durationMs) / 1000) + 1000;
  const lagLimit = Math.max(10, Math.round(rate / 4));
  const start = performance.now();
  let sent = 0;
  let notSent = 0;
  let inflight = 0;
  let next = 0;
  let lastTick = 0;
  const fire = (i: number) => {
    const row = rows[i]!;
    const entry = row.entry;
    row.sent++;
    inflight++;
    const began = performance.now();
    // dispatch with a plain handler, not request(): no stream per response, less client CPU on a shared machine.
    let status = 0;
    const chunks: Buffer[] = [];
    let settled = false;
    const settle = () => {
      settled = true;
      inflight--;
    };
    pool.dispatch(
      { origin: url, method: entry.method as 'GET', path: entry.path, headers: entry.headers, body: entry.body },
      {
        onConnect() {},
        onHeaders(statusCode: number) {
          status = statusCode;
          return true;
        },
        onData(chunk: Buffer) {
          chunks.push(chunk);
          return true;
        },
        onComplete() {
          if (settled) return;
          settle();
          const text = chunks.length === 1 ? chunks[0]!.toString() : Buffer.concat(chunks).toString();
          const outcome = row.response(status, text, performance.now() - began);
          if (i === GET && outcome === 'ok') {
            let list: Array<{ delivery_count?: number }> | undefined;
            try {
              list = JSON.parse(text) as Array<{ delivery_count?: number }>;
            } catch {
              /* counted below */
            }
            if (!Array.isArray(list)) {
              row.ok--;
              row.unexpected++;
              row.note('unexpected', `200 get body is not a list: ${text.slice(0, 80)}`);
              return;
            }
            pubsub.received += list.length;
            for (const m of list) if ((m.delivery_count ?? 0) > 0) pubsub.redelivered++;
          }
        },
        onError(err: Error) {
          if (settled) return;
          settle();
          row.error(err);
        },
      },
    );
  };
  while (!stopping && sent < maxTotal) {
    const elapsed = performance.now() - start;
    if (elapsed >= durationMs) break;
    let due = Math.floor((rate * elapsed) / 1000) - sent - notSent;
    if (due > lagLimit) {
      notSent += due - lagLimit;
      due = lagLimit;
    }
    const n = Math.min(due, MAX_INFLIGHT - inflight, maxTotal - sent);
    for (let k = 0; k < n; k++) {
      fire(next);
      next = (next + 1) % rows.length;
      sent++;
    }
    if (elapsed - lastTick >= 1000) {
      lastTick = elapsed;
      onTick(elapsed);
    }
    await sleep(2);
  }
  const ms = performance.now() - start;
  // Let the calls in flight finish (each is bounded by REQUEST_TIMEOUT_MS).
  for (let i = 0; i < (REQUEST_TIMEOUT_MS * 2) / 50 && inflight > 0; i++) await sleep(50);
  await pool.close().catch(() => undefined);
  return { sent, notSent, ms };
}

/** Calls the hostile channel every CRASH_EVERY_S; on a quarantine answer, rewrites its file (a redeploy). */
async function hostileLoop(url: string, file: string, row: Row, stats: HostileStats, durationMs: number): Promise<void> {
  const client = new Client(url, { headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS });
  const start = performance.now();
  const maxCalls = Math.floor(durationMs / (CRASH_EVERY_S * 1000)) + 1;
  let previous: Outcome | undefined;
  try {
    for (let i = 1; i <= maxCalls && !stopping; i++) {
      const at = start + i * CRASH_EVERY_S * 1000;
      if (at - start >= durationMs) break;
      while (!stopping && performance.now() < at) await sleep(Math.min(200, at - performance.now()));
      if (stopping) break;
      stats.calls++;
      row.sent++;
      const began = performance.now();
      try {
        const res = await client.request({ method: 'GET', path: HOSTILE_ENTRY.path });
        const text = await res.body.text();
        const outcome = row.response(res.statusCode, text, performance.now() - began);
        const last = previous;
        previous = outcome;
        if (outcome === 'crash') stats.crashes++;
        else if (outcome === 'quarantine') {
          if (last === 'quarantine') stats.stillQuarantined++;
          stats.quarantines++;
          writeFileSync(file, `${HOSTILE}// redeploy ${++stats.redeploys}\n`);
        } else stats.other++;
      } catch (err) {
        row.error(err);
        previous = undefined;
        stats.noAnswer++;
      }
    }
  } finally {
    await client.close().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

function pad(s: string | number, n: number, left = false): string {
  const str = String(s);
  return left ? str.padEnd(n) : str.padStart(n);
}

function printRows(rows: Row[]): void {
  const head = `${pad('channel', 26, true)} ${pad('sent', 9)} ${pad('ok', 9)} ${pad('crash loss', 10)} ${pad('other 5xx', 9)} ${pad('unexp.', 7)} ${pad('conn err', 8)} ${pad('timeout', 7)} ${pad('p50 ms', 7)} ${pad('p99 ms', 7)} ${pad('max ms', 8)}`;
  console.log(head);
  console.log('-'.repeat(head.length));
  const total = new Row(HOSTILE_ENTRY);
  for (const r of rows) {
    console.log(`${pad(r.entry.label, 26, true)} ${pad(r.sent, 9)} ${pad(r.ok, 9)} ${pad(r.crash + r.quarantine, 10)} ${pad(r.other5xx, 9)} ${pad(r.unexpected, 7)} ${pad(r.errors, 8)} ${pad(r.timeouts, 7)} ${pad(r.latency.percentile(0.5).toFixed(1), 7)} ${pad(r.latency.percentile(0.99).toFixed(1), 7)} ${pad(r.latency.max.toFixed(0), 8)}`);
    for (const k of ['sent', 'ok', 'crash', 'quarantine', 'other5xx', 'unexpected', 'errors', 'timeouts'] as const) total[k] += r[k];
  }
  console.log('-'.repeat(head.length));
  console.log(`${pad('total', 26, true)} ${pad(total.sent, 9)} ${pad(total.ok, 9)} ${pad(total.crash + total.quarantine, 10)} ${pad(total.other5xx, 9)} ${pad(total.unexpected, 7)} ${pad(total.errors, 8)} ${pad(total.timeouts, 7)}`);
  const details = rows.flatMap((r) => [...r.detail].map(([k, n]) => `  ${pad(n, 8)}  ${r.entry.label}  ${k}`));
  if (details.length) {
    console.log('\nAnswers other than the expected ones, by channel and details:');
    for (const d of details) console.log(d);
  }
}

function rowJson(r: Row) {
  return {
    channel: r.entry.label,
    request: `${r.entry.method} ${r.entry.path}`,
    sent: r.sent,
    ok: r.ok,
    crash_loss: r.crash,
    quarantine: r.quarantine,
    other_5xx: r.other5xx,
    unexpected: r.unexpected,
    connection_errors: r.errors,
    timeouts: r.timeouts,
    errors_after_server_exit: r.afterExit,
    p50_ms: r.latency.percentile(0.5),
    p99_ms: r.latency.percentile(0.99),
    max_ms: Math.round(r.latency.max),
    details: Object.fromEntries(r.detail),
  };
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-soak-'));
  mkdirSync(join(dir, 'services'));
  for (const [file, code] of Object.entries(SERVICES)) writeFileSync(join(dir, 'services', file), code);
  // Peak runs with a rate limit that cannot be hit; the soak lowers it to 3× the channel's share.
  writeFileSync(join(dir, 'svc.yaml'), config(dir, 1_000_000));
  const sandboxPids = new Set<number>();
  let server: Server | undefined;
  let secondSignal = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopping && secondSignal) return;
    if (stopping) {
      secondSignal = true;
      console.error(`\n${sig} again: stopping the server now`);
      void stopServer(server, sandboxPids).then(() => process.exit(130));
      return;
    }
    console.error(`\n${sig}: stopping the load, then the server (again to stop at once)`);
    interrupted = true;
    stopping = true;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Last resort if this process exits some other way: never leave the server running.
  process.on('exit', () => {
    if (server && !server.exit) server.proc.kill('SIGKILL');
  });

  let keepDir = args.keep!;
  try {
    console.log(`svc soak: ${MINUTES} min at ${RATE_FRACTION} × peak, hostile call every ${CRASH_EVERY_S} s, ${WORKERS} sandbox processes`);
    console.log(`project: ${dir}`);
    server = await startServer(dir);
    const srv = server;
    console.log(`server pid ${srv.pid} at ${srv.url} (${sandboxPidsOf(srv.pid).length} sandbox processes; its own process group: if this script is killed with SIGKILL, kill it by that pid)`);

    // Every channel answers as expected before any load.
    for (const m of MIX) {
      const res = await fetch(srv.url + m.path, { method: m.method, headers: m.headers, body: m.body });
      const text = await res.text();
      if (!m.expect.includes(res.status)) throw new Error(`setup check: ${m.label} answered ${res.status} ${text}`);
    }
    await drain(srv.url);

    // Peak: the mix at 50 connections (autocannon, 1 s warm-up + PEAK_SECONDS).
    console.log(`\npeak: autocannon, ${PEAK_CONNECTIONS} connections, ${PEAK_SECONDS} s…`);
    const peak = await load(srv.url, { connections: PEAK_CONNECTIONS, duration: PEAK_SECONDS, requests: MIX.map(({ method, path, headers, body }) => ({ method, path, headers, body })) });
    const expectedNon2xx = (1 / MIX.length) * peak.rps * PEAK_SECONDS;
    console.log(`peak ${Math.round(peak.rps)} req/s (p50 ${peak.p50} ms, p99 ${peak.p99} ms, non-2xx ${peak.non2xx} of which ≈${Math.round(expectedNon2xx)} are the expected 400s, errors ${peak.errors})`);
    if (exitOf(srv)) throw new Error('server died during the peak measurement');
    const drained = await drain(srv.url);
    console.log(`drained ${drained.got} messages published during the peak run`);

    const rate = Math.max(1, Math.round(peak.rps * RATE_FRACTION));
    const limitedShare = rate / MIX.length;
    const limitedRate = Math.max(50, Math.ceil(limitedShare * 3));
    writeFileSync(join(dir, 'svc.yaml'), config(dir, limitedRate));
    let applied = false;
    for (let i = 0; i < 100 && !applied && !stopping; i++) {
      await sleep(100);
      const res = await fetch(`${srv.url}/limited`);
      await res.arrayBuffer();
      applied = res.headers.get('x-ratelimit-limit') === String(limitedRate);
    }
    console.log(`limited channel: rate ${limitedRate}/s, burst ${limitedRate} (3× its share of the target rate)${applied ? '' : ' — NOT seen applied within 10 s'}`);

    // The soak.
    console.log(`\nsoak: ${rate} req/s (${RATE_FRACTION} × ${Math.round(peak.rps)}) for ${MINUTES} min; start sample after ${Math.round(WARMUP_MS / 1000)} s`);
    const hostileRow = new Row(HOSTILE_ENTRY);
    const hostile: HostileStats = { calls: 0, crashes: 0, quarantines: 0, redeploys: 0, other: 0, noAnswer: 0, stillQuarantined: 0 };
    const rows = MIX.map((m) => new Row(m));
    const pubsub: PubsubStats = { received: 0, redelivered: 0 };

    const samples: Sample[] = [];
    const cpu = new CpuMeter(srv.pid);
    let startSample: Sample | undefined;
    const deathsBefore = srv.sandboxDeaths;
    const soakStart = performance.now();
    sample(srv.pid, sandboxPids, cpu);
    const deathWatch = srv.exited.then(() => {
      if (!stopping) console.error(`\nSERVER EXITED during the soak (code ${srv.exit?.code}, signal ${srv.exit?.signal})`);
      stopping = true;
    });
    void deathWatch;
    let lastPrint = 0;
    // One sample a second; the start sample after the warm-up, the end sample in the last
    // seconds of the load (both with every sandbox process up, when possible).
    let endSample: Sample | undefined;
    const sampler = (async () => {
      const end = soakStart + SOAK_MS;
      for (let i = 0; i < SOAK_MS / 1000 + 10 && !exitOf(srv); i++) {
        // Ctrl-C: the end sample at once, while the load's connections are still open.
        if (stopping || performance.now() >= end - 2_500) {
          endSample = stopping ? sample(srv.pid, sandboxPids) : await fullSample(srv.pid, sandboxPids);
          if (exitOf(srv)) endSample = undefined;
          else samples.push(endSample);
          break;
        }
        samples.push(sample(srv.pid, sandboxPids, cpu));
        if (!startSample && performance.now() - soakStart >= WARMUP_MS) startSample = await fullSample(srv.pid, sandboxPids);
        for (let k = 0; k < 10 && !stopping; k++) await sleep(100);
      }
    })();
    const progress = (elapsed: number) => {
      if (elapsed - lastPrint < 10_000) return;
      lastPrint = elapsed;
      const tot = rows.reduce((a, r) => ({ sent: a.sent + r.sent, ok: a.ok + r.ok, crash: a.crash + r.crash, other: a.other + r.other5xx, err: a.err + r.errors + r.timeouts }), { sent: 0, ok: 0, crash: 0, other: 0, err: 0 });
      const s = samples.at(-1);
      console.log(
        `[${pad(Math.round(elapsed / 1000), 4)} s] sent ${tot.sent} (${Math.round((tot.sent / elapsed) * 1000)}/s) ok ${tot.ok} crash-loss ${tot.crash} other-5xx ${tot.other} conn-err ${tot.err} | hostile ${hostile.crashes} crashes ${hostile.quarantines} quarantines | server ${s?.serverRssMb ?? '?'} MB ${s?.serverFds ?? '?'} fds, sandboxes ${s?.sandboxes ?? '?'}× ${s?.sandboxRssMb ?? '?'} MB`,
      );
    };
    const [result] = await Promise.all([
      soakLoad(srv.url, rate, rows, pubsub, SOAK_MS, progress),
      hostileLoop(srv.url, join(dir, 'services', 'hostile.ts'), hostileRow, hostile, SOAK_MS),
    ]);
    stopping = true;
    await sampler;
    if (!exitOf(srv)) sample(srv.pid, sandboxPids, cpu);
    const cpuUse = cpu.cores();
    const exit = exitOf(srv);
    const alive = !exit;
    if (alive) {
      const d = await drain(srv.url).catch(() => ({ got: 0, redelivered: 0 }));
      pubsub.received += d.got;
      pubsub.redelivered += d.redelivered;
    }

    // Report.
    const all = [...rows, hostileRow];
    const totals = { sent: 0, ok: 0, crash: 0, quarantine: 0, other5xx: 0, unexpected: 0, errors: 0, timeouts: 0, afterExit: 0 };
    for (const r of all) for (const k of Object.keys(totals) as Array<keyof typeof totals>) totals[k] += r[k];
    const soakS = result.ms / 1000;
    console.log(`\n## Soak result (${(soakS / 60).toFixed(1)} min, ${WORKERS} sandbox processes)\n`);
    console.log(`peak ${Math.round(peak.rps)} req/s; target ${rate} req/s; achieved ${Math.round(result.sent / soakS)} req/s (${result.sent} sent, ${result.notSent} not sent because the loop fell behind)\n`);
    printRows(all);
    console.log(`\nCPU over the soak, in cores (of ${cpuUse.machine_cores}): load generator ${cpuUse.generator}, server ${cpuUse.server}, sandboxes ≈${cpuUse.sandboxes}; whole machine ${cpuUse.machine} (the rest is other work on the machine)`);

    const published = rows[PUBLISH]!.ok;
    console.log(`\nhostile: ${hostile.calls} calls, ${hostile.crashes} crashed their sandbox, ${hostile.quarantines} quarantined, ${hostile.redeploys} redeploys (${hostile.stillQuarantined} still quarantined at the next call), ${hostile.other} other answers, ${hostile.noAnswer} without an answer`);
    console.log(`sandbox deaths in the server log: ${srv.sandboxDeaths - deathsBefore}; distinct sandbox processes seen: ${sandboxPids.size}`);
    console.log(`pub/sub: ${published} published (2xx), ${pubsub.received} received by the test subscriber (${pubsub.redelivered} redeliveries)`);

    // min/max over the samples from the start sample on (all samples when there is none): the
    // first seconds, before the load's connections are open, would only lower the minimum.
    const startAt = startSample?.atS ?? 0;
    const measured = samples.filter((s) => s.atS >= startAt);
    const res = (pick: (s: Sample) => number) => {
      const vals = measured.map(pick);
      return { start: startSample ? pick(startSample) : undefined, end: endSample ? pick(endSample) : undefined, min: vals.length ? Math.min(...vals) : undefined, max: vals.length ? Math.max(...vals) : undefined };
    };
    const resources = {
      server_rss_mb: res((s) => s.serverRssMb),
      server_fds: res((s) => s.serverFds),
      sandbox_rss_mb: res((s) => s.sandboxRssMb),
      sandbox_fds: res((s) => s.sandboxFds),
      sandbox_processes: res((s) => s.sandboxes),
    };
    console.log(`\nresources (start = after ${Math.round(WARMUP_MS / 1000)} s warm-up${startSample ? ` at ${startSample.atS} s` : ''}; min/max over the ${measured.length} samples from then on, 1 s apart):`);
    console.log(`${pad('', 22, true)} ${pad('start', 7)} ${pad('end', 7)} ${pad('min', 7)} ${pad('max', 7)}`);
    for (const [k, v] of Object.entries(resources)) console.log(`${pad(k, 22, true)} ${pad(v.start ?? '-', 7)} ${pad(v.end ?? '-', 7)} ${pad(v.min ?? '-', 7)} ${pad(v.max ?? '-', 7)}`);

    // null: not known (no start or end sample, e.g. the server died).
    const rssFlat = (v: { start?: number; end?: number }) => (v.start === undefined || v.end === undefined ? null : v.end <= v.start * RSS_FLAT_FACTOR);
    const fdFlat = (v: { start?: number; end?: number }) => (v.start === undefined || v.end === undefined ? null : Math.abs(v.end - v.start) <= FD_FLAT_DELTA);
    // Probation processes come and go (kernel/sandbox/pool.ts): sandboxes are judged per process.
    const perProcess = (v: { start?: number; end?: number }) => {
      const n = resources.sandbox_processes;
      return { start: v.start === undefined || !n.start ? undefined : v.start / n.start, end: v.end === undefined || !n.end ? undefined : v.end / n.end };
    };
    const flat = {
      server_rss: rssFlat(resources.server_rss_mb),
      server_fds: fdFlat(resources.server_fds),
      sandbox_rss: rssFlat(perProcess(resources.sandbox_rss_mb)),
      sandbox_fds: fdFlat(perProcess(resources.sandbox_fds)),
    };
    const yes = (b: boolean | null) => (b === null ? 'n/a' : b ? 'yes' : 'NO');
    const fromTo = (v: { start?: number; end?: number }, unit = '') => `(${v.start ?? '-'} → ${v.end ?? '-'}${unit})`;
    const lossPct = ((100 * (totals.crash + totals.quarantine)) / Math.max(1, totals.sent)).toFixed(3);
    const receivedAll = alive ? pubsub.received >= published : null;
    const verdict: Array<[string, string]> = [
      ['load: achieved / target req/s', `${Math.round(result.sent / soakS)} / ${rate} (${Math.round((100 * result.sent) / soakS / rate)}%)`],
      ['server alive the whole run', !exit ? 'yes' : `NO (exit code ${exit.code}, signal ${exit.signal}, ${((exit.atMs - (soakStart - t0)) / 1000).toFixed(1)} s into the soak)`],
      ['other 5xx (goal 0)', String(totals.other5xx)],
      ['connection errors / timeouts (goal 0)', `${totals.errors} / ${totals.timeouts}${totals.afterExit ? ` (${totals.afterExit} of them after the server exited)` : ''}`],
      ['unexpected non-5xx answers (goal 0)', String(totals.unexpected)],
      ['documented crash losses', `${totals.crash + totals.quarantine} (${lossPct}% of ${totals.sent})`],
      ['server RSS flat (end ≤ start +15%)', `${yes(flat.server_rss)} ${fromTo(resources.server_rss_mb, ' MB')}`],
      [`server fds flat (±${FD_FLAT_DELTA})`, `${yes(flat.server_fds)} ${fromTo(resources.server_fds)}`],
      ['sandbox RSS per process flat (end ≤ start +15%)', `${yes(flat.sandbox_rss)} ${fromTo(resources.sandbox_rss_mb, ' MB')}`],
      [`sandbox fds per process flat (±${FD_FLAT_DELTA})`, `${yes(flat.sandbox_fds)} ${fromTo(resources.sandbox_fds)}`],
      ['pub/sub: all published received', `${yes(receivedAll)} (${published} published, ${pubsub.received} received)`],
    ];
    console.log('\n## Verdict\n');
    for (const [k, v] of verdict) console.log(`${k.padEnd(40)} ${v}`);
    if (interrupted) console.log('(interrupted: partial run)');

    if (!alive) {
      keepDir = true;
      console.log(`\nThe server died. Its output that is not a JSON log line (Node's own errors, V8 fatal errors of sandbox processes), then its last JSON log lines; full log in ${join(dir, 'server.log')}:\n`);
      for (const l of srv.odd) console.log(`  | ${l}`);
      console.log('  ---- last JSON log lines ----');
      for (const l of srv.tail.filter((x) => x.startsWith('{')).slice(-10)) console.log(`  | ${l}`);
    }

    const failed = !alive || totals.other5xx > 0;
    if (args.json) {
      writeFileSync(
        args.json,
        JSON.stringify(
          {
            options: { minutes: MINUTES, rate_fraction: RATE_FRACTION, crash_every_s: CRASH_EVERY_S, workers: WORKERS },
            date: new Date().toISOString(),
            node: process.version,
            peak: { rps: Math.round(peak.rps), p50_ms: peak.p50, p99_ms: peak.p99, non2xx: peak.non2xx, errors: peak.errors, connections: PEAK_CONNECTIONS, seconds: PEAK_SECONDS },
            target_rps: rate,
            achieved_rps: Math.round(result.sent / soakS),
            soak_seconds: Math.round(soakS),
            not_sent: result.notSent,
            cpu_cores: cpuUse,
            limited_channel_rate: limitedRate,
            channels: all.map(rowJson),
            totals,
            hostile,
            sandbox_deaths_logged: srv.sandboxDeaths - deathsBefore,
            sandbox_processes_seen: sandboxPids.size,
            pubsub: { published, received: pubsub.received, redelivered: pubsub.redelivered },
            resources,
            warmup_seconds: Math.round(WARMUP_MS / 1000),
            flat,
            server: { alive, exit: exit ? { code: exit.code, signal: exit.signal, seconds_into_soak: Math.round((exit.atMs - (soakStart - t0)) / 100) / 10 } : null, output_non_json: srv.odd, output_tail: alive ? [] : srv.tail },
            interrupted,
            verdict: failed ? 'FAIL' : 'PASS',
          },
          null,
          2,
        ) + '\n',
      );
      console.log(`\nwrote ${args.json}`);
    }
    console.log(`\n${failed ? 'FAIL' : 'PASS'}: ${!alive ? 'the server died; ' : ''}${totals.other5xx > 0 ? `${totals.other5xx} other 5xx; ` : ''}exit ${failed ? 1 : 0}`);
    return failed ? 1 : interrupted ? 130 : 0;
  } catch (err) {
    keepDir = true;
    console.error(`soak failed: ${(err as Error).stack ?? err}`);
    if (server) {
      console.error('server output (last lines):');
      for (const l of server.tail.slice(-40)) console.error(`  | ${l}`);
    }
    return 2;
  } finally {
    stopping = true;
    await stopServer(server, sandboxPids);
    if (keepDir) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

// A hard bound on the whole run: setup + peak + soak + the slowest teardown.
const hardStop = setTimeout(() => {
  console.error('soak: hard time bound reached, exiting');
  process.exit(3);
}, SOAK_MS + 5 * 60_000);
hardStop.unref();

process.exitCode = await main();
// undici keep-alive sockets and autocannon timers may linger; the work is done.
setTimeout(() => process.exit(process.exitCode as number), 200).unref();
