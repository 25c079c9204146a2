import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../helpers/kernel.ts';
import { homeIndex } from '../../kernel/sandbox/pool.ts';
import { cpuMs } from '../helpers/proc.ts';
import { crashes } from './corpus/crashes.ts';
import { deploy } from './corpus/deploy.ts';
import { escapes } from './corpus/escapes.ts';
import { hostcalls } from './corpus/hostcalls.ts';
import { limits } from './corpus/limits.ts';
import { output } from './corpus/output.ts';
import { tampering } from './corpus/tampering.ts';
import { thenables } from './corpus/thenables.ts';
import { FORGED, TIMEOUT_MS, type CorpusCase, type CorpusRequest, type CorpusResponse, type Expectation, type Theme } from './corpus/types.ts';

/**
 * The sandbox escape and crash corpus: one kernel (two sandbox processes), every case of
 * test/sandbox/corpus/*.ts run against it in theme order, crash cases last and spaced out.
 * After every case the neighbour services (one at home on each sandbox process) must answer
 * 200 with pristine globals; a case that leaves the server unable to answer fails, and the
 * runner then kills the sandbox processes (its own children) so the cases after it still run.
 * SVC_CORPUS_REPORT=FILE writes what each case observed, as JSON.
 */

const THEMES: Array<[Theme, CorpusCase[]]> = [
  ['escapes', escapes],
  ['output', output],
  ['thenables', thenables],
  ['tampering', tampering],
  ['hostcalls', hostcalls],
  ['limits', limits],
  ['deploy', deploy],
  ['crashes', crashes],
];

/** No answer this long after the time a response is expected within (or 3 s) is a hang. */
const HANG_MARGIN_MS = 1500;
const hangCap = (e: Expectation) => (e.withinMs ?? 3000) + HANG_MARGIN_MS;
const WORKERS = 2;

const nameOf = (file: string) => file.replace(/\.(js|ts|mjs)$/, '');

/** One neighbour at home on each sandbox process, placed with the pool's own hash. */
const NEIGHBOURS: string[] = [];
for (let home = 0; home < WORKERS; home++) {
  for (let i = 0; ; i++) {
    if (homeIndex(`neighbour-${i}`, WORKERS) === home && !NEIGHBOURS.includes(`neighbour-${i}`)) {
      NEIGHBOURS.push(`neighbour-${i}`);
      break;
    }
  }
}

/** A healthy service that also reports whether its own globals are pristine. */
const NEIGHBOUR_CODE = `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 2000, memoryMb: 32 }, handle() {
  const native = (f) => typeof f === 'function' && /\\[native code\\]/.test(Function.prototype.toString.call(f));
  const pristine = native(Promise.prototype.then) && native(JSON.parse) && native(JSON.stringify) && native(Array.prototype.push)
    && native(Object.defineProperty) && native(Function.prototype.call) && native(Function.prototype.apply) && native(Map.prototype.get)
    && ({}).toJSON === undefined && ({}).status === undefined && Error.prepareStackTrace === undefined && !Object.isFrozen(Object.prototype)
    && JSON.stringify({ a: [1] }) === '{"a":[1]}';
  return { ok: true, pristine };
} });
`;

const allCases = THEMES.flatMap(([, cases]) => cases);
const channelNames = [...allCases.map((c) => nameOf(c.file)), ...NEIGHBOURS];

const config = `
server:
  sandbox: { workers: ${WORKERS}, timeout_ms: 1000, max_timeout_ms: 10000, memory_mb: 32, max_memory_mb: 64, max_output_bytes: 1048576 }
channel_rest:
${channelNames.map((n) => `  - { name: ${n}, url_path: /${n}, service: ${n}, security: none }`).join('\n')}
`;

const services: Record<string, string> = Object.fromEntries([
  ...allCases.filter((c) => !c.hotDeploy).map((c) => [c.file, c.code]),
  ...NEIGHBOURS.map((n) => [`${n}.js`, NEIGHBOUR_CODE]),
]);

let k: TestKernel;
const logs: Array<Record<string, unknown>> = [];
const uncaught: unknown[] = [];
const onUncaught = (err: unknown) => void uncaught.push(err);
const observed: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  // Tracked per case: a kernel-side throw is a server crash in production (vitest reports it too).
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  k = await startKernel({ config, services, logs, listen: true });
  for (const c of allCases) if (!c.hotDeploy) expect(k.kernel.services.errors.get(nameOf(c.file)), c.file).toBeUndefined();
}, 90_000);

afterAll(async () => {
  const pids = k?.kernel.pool.pids() ?? [];
  const killer = setTimeout(() => pids.forEach(killQuietly), 5000);
  await k?.close();
  clearTimeout(killer);
  process.off('uncaughtException', onUncaught);
  process.off('unhandledRejection', onUncaught);
  if (process.env.SVC_CORPUS_REPORT) writeFileSync(process.env.SVC_CORPUS_REPORT, JSON.stringify(observed, null, 2));
}, 30_000);

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class Hang extends Error {}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Hang(`${what}: no answer within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

async function viaInject(req: CorpusRequest, url: string, cap: number): Promise<CorpusResponse> {
  const started = Date.now();
  const res = await within(
    k.app.inject({ method: req.method ?? 'GET', url, payload: req.payload as string | undefined, headers: req.headers }),
    cap,
    `${req.method ?? 'GET'} ${url}`,
  );
  return { status: res.statusCode, headers: res.headers as CorpusResponse['headers'], body: res.body, ms: Date.now() - started };
}

/** One request over a real TCP connection; the response is parsed from the bytes Node wrote. */
function viaSocket(req: CorpusRequest, url: string, cap: number): Promise<CorpusResponse> {
  const { port, hostname } = new URL(k.url!);
  const body = req.payload === undefined ? '' : typeof req.payload === 'string' ? req.payload : JSON.stringify(req.payload);
  const headers = { host: `${hostname}:${port}`, connection: 'close', ...(body ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}), ...req.headers };
  const head = `${req.method ?? 'GET'} ${url} HTTP/1.1\r\n${Object.entries(headers).map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`;
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname, () => socket.write(head + body));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Hang(`${req.method ?? 'GET'} ${url} (socket): no answer within ${cap} ms${chunks.length ? `; partial: ${JSON.stringify(Buffer.concat(chunks).toString('latin1').slice(0, 300))}` : ''}`));
    }, cap);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        resolve({ ...parseRaw(Buffer.concat(chunks)), ms: Date.now() - started });
      } catch (err) {
        reject(err);
      }
    });
  });
}

function parseRaw(raw: Buffer): Omit<CorpusResponse, 'ms'> {
  const text = raw.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) throw new Error(`connection closed without a complete response: ${JSON.stringify(text.slice(0, 300))}`);
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine!)?.[1]);
  const headers: CorpusResponse['headers'] = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    const prev = headers[name];
    headers[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  let rest = raw.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  let body: Buffer;
  if (String(headers['transfer-encoding']).toLowerCase() === 'chunked') {
    const parts: Buffer[] = [];
    for (;;) {
      const nl = rest.indexOf('\r\n');
      const size = parseInt(rest.subarray(0, nl).toString('latin1'), 16);
      if (nl === -1 || Number.isNaN(size)) throw new Error(`malformed chunked body: ${JSON.stringify(rest.toString('latin1').slice(0, 200))}`);
      if (size === 0) {
        rest = rest.subarray(rest.indexOf('\r\n\r\n', nl) + 4);
        break;
      }
      parts.push(rest.subarray(nl + 2, nl + 2 + size));
      rest = rest.subarray(nl + 2 + size + 2);
    }
    body = Buffer.concat(parts);
  } else if (typeof headers['content-length'] === 'string') {
    const n = Number(headers['content-length']);
    body = rest.subarray(0, n);
    rest = rest.subarray(n);
  } else {
    body = rest;
    rest = Buffer.alloc(0);
  }
  if (rest.length) throw new Error(`bytes after the response (response splitting): ${JSON.stringify(rest.toString('latin1').slice(0, 300))}`);
  return { status, headers, rawHeaderLines: lines, body: body.toString('utf8') };
}

function send(c: CorpusCase, req: CorpusRequest = {}, e: Expectation): Promise<CorpusResponse> {
  const url = req.url || `/${nameOf(c.file)}`;
  return c.transport === 'socket' ? viaSocket(req, url, hangCap(e)) : viaInject(req, url, hangCap(e));
}

function jsonOf(body: string): any {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** Every response: one X-Svc-CID that the service did not pick; every error: svc's body with that CID. */
function checkCid(res: CorpusResponse): void {
  const cid = res.headers['x-svc-cid'];
  expect(typeof cid, `exactly one x-svc-cid header (got ${JSON.stringify(cid)})`).toBe('string');
  expect(cid, 'x-svc-cid chosen by the service').not.toContain(FORGED);
  expect(cid as string).not.toBe('');
  if (res.status >= 400) {
    const j = jsonOf(res.body);
    expect(j, `error body is svc's {result, cid, details} (got ${res.body.slice(0, 300)})`).toEqual({ result: 'Error', cid, details: expect.any(String) });
  }
}

/** Runs every check, so a report names all that is wrong with a response, not only the first. */
function checkExpectation(e: Expectation, res: CorpusResponse, label: string): void {
  const problems: string[] = [];
  const check = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      problems.push((err as Error).message.split('\n')[0]!);
    }
  };
  const statuses = Array.isArray(e.status) ? e.status : [e.status];
  const j = jsonOf(res.body);
  check(() => expect(statuses, `status ${res.status}, body ${res.body.slice(0, 300)}`).toContain(res.status));
  check(() => checkCid(res));
  if (e.details !== undefined && res.status >= 400) {
    check(() => (typeof e.details === 'string' ? expect(j?.details).toBe(e.details) : expect(j?.details).toMatch(e.details!)));
  }
  if (e.withinMs !== undefined) check(() => expect(res.ms, `answered after ${res.ms} ms`).toBeLessThanOrEqual(e.withinMs!));
  if (e.bodyCheck) check(() => e.bodyCheck!(j, res));
  if (problems.length) throw new Error(`${label}: ${problems.join('; ')}`);
}

/** CPU time (ms) the sandbox processes used so far: user + system, from /proc. */
function sandboxCpuMs(): number {
  return k.kernel.pool.pids().reduce((total, pid) => total + (cpuMs(pid) ?? 0), 0);
}

async function neighboursHealthy(): Promise<string | undefined> {
  for (const n of NEIGHBOURS) {
    try {
      const res = await within(k.app.inject({ method: 'GET', url: `/${n}` }), 3000, n);
      if (res.statusCode !== 200 || res.json().pristine !== true) return `${n} answered ${res.statusCode} ${res.body.slice(0, 200)}`;
      if (typeof res.headers['x-svc-cid'] !== 'string') return `${n} answered without one X-Svc-CID header`;
    } catch (err) {
      return String((err as Error).message);
    }
  }
  return undefined;
}

/** The server no longer answers: kill our sandbox processes so the pool restarts them, and the next cases can run. */
async function recover(): Promise<void> {
  for (const pid of k.kernel.pool.pids()) killQuietly(pid);
  for (let i = 0; i < 100; i++) {
    await sleep(200);
    if (k.kernel.pool.pids().length === WORKERS && !(await neighboursHealthy())) return;
  }
}

let lastCrashAt = 0;

async function runCase(theme: Theme, c: CorpusCase): Promise<void> {
  const failures: string[] = [];
  const record: Record<string, unknown> = { theme, name: c.name, file: c.file };
  observed.push(record);
  const soft = async (label: string, fn: () => unknown) => {
    try {
      await fn();
    } catch (err) {
      failures.push(`${label}: ${(err as Error).message.split('\n').slice(0, 6).join('\n')}`);
    }
  };
  const uncaughtBefore = uncaught.length;
  const note = (res: CorpusResponse) => ({ status: res.status, body: res.body.slice(0, 300), ms: res.ms });

  if (theme === 'crashes') {
    // A crashed process restarts in about half a second, then redeploys every service: let it.
    await sleep(Math.max(0, lastCrashAt + 1500 - Date.now()));
    for (let i = 0; i < 50 && k.kernel.pool.pids().length < WORKERS; i++) await sleep(100);
  }

  try {
    if (c.hotDeploy) {
      const started = Date.now();
      await soft('deploy', async () => {
        await within(k.writeService(c.file, c.code), c.hotDeploy!.withinMs + 2000, 'hot deploy');
        const ms = Date.now() - started;
        const error = k.kernel.services.errors.get(nameOf(c.file));
        record.deploy = { ms, error: error?.slice(0, 300) ?? null, deployed: !!k.kernel.services.get(nameOf(c.file)) };
        expect(error, 'the deploy is refused with an error').toMatch(c.hotDeploy!.error);
        expect(ms, 'deploy outcome time').toBeLessThanOrEqual(c.hotDeploy!.withinMs);
      });
    }

    const side = c.alongside ? send(c, c.alongside.request, c.alongside.expect).then((r) => ({ r }), (err: Error) => ({ err })) : undefined;
    if (c.alongside) await sleep(c.alongside.leadMs ?? 100);

    let main: CorpusResponse | undefined;
    await soft('response', async () => {
      main = await send(c, c.request, c.expect);
      record.outcome = note(main);
      checkExpectation(c.expect, main, 'response');
    });
    if (!main) record.outcome ??= { failure: failures.at(-1) };

    if (side) {
      await soft('alongside request', async () => {
        const got = await side;
        if ('err' in got) throw got.err;
        record.alongside = note(got.r);
        checkExpectation(c.alongside!.expect, got.r, 'alongside request');
      });
    }

    if (main && c.expect.maxLogLines !== undefined) {
      const cid = main.headers['x-svc-cid'];
      await soft('log lines', async () => {
        await sleep(50);
        const lines = logs.filter((l) => l.cid === cid);
        record.logLines = lines.length;
        expect(lines.length, `log lines with the request's CID (first: ${JSON.stringify(lines.slice(0, 2))})`).toBeLessThanOrEqual(c.expect.maxLogLines!);
      });
    }

    if (main && c.expect.idleAfter) {
      await soft('idle after the call', async () => {
        await sleep(TIMEOUT_MS + 300);
        const before = sandboxCpuMs();
        await sleep(1000);
        const used = sandboxCpuMs() - before;
        record.cpuAfterMs = used;
        expect(used, 'sandbox CPU ms in the second after the call limit (work outlived its call)').toBeLessThan(150);
      });
    }

    if (c.expect.next) {
      const next = c.expect.next;
      await soft('next request', async () => {
        if (next.delayMs) await sleep(next.delayMs);
        const res = await send(c, next.request, next.expect);
        record.next = note(res);
        checkExpectation(next.expect, res, 'next request');
      });
    }
  } finally {
    if (theme === 'crashes') lastCrashAt = Date.now();
    if (uncaught.length > uncaughtBefore) {
      const errs = uncaught.slice(uncaughtBefore).map((e) => String((e as Error)?.stack ?? e).split('\n').slice(0, 3).join(' | '));
      record.uncaught = errs;
      failures.push(`the kernel process threw (a server crash outside tests): ${errs.join('; ')}`);
    }
    const sick = await neighboursHealthy();
    if (sick) {
      record.unhealthy = sick;
      failures.push(`neighbour services are not healthy after this case: ${sick}`);
      await recover();
      record.recovered = !(await neighboursHealthy());
    }
    if (c.hotDeploy) await within(k.removeService(c.file), 10_000, 'undeploy').catch(() => undefined);
  }
  record.pass = failures.length === 0;
  if (failures.length) throw new Error(`${c.file}: ${c.name}\n${failures.join('\n')}`);
}

for (const [theme, cases] of THEMES) {
  describe(theme, () => {
    for (const c of cases) it(c.name, () => runCase(theme, c), 40_000);
  });
}

describe('corpus', () => {
  it('has at least 40 cases, unique files, and README.md lists each of them', () => {
    expect(allCases.length).toBeGreaterThanOrEqual(40);
    expect(new Set(allCases.map((c) => c.file)).size).toBe(allCases.length);
    const readme = readFileSync(new URL('./README.md', import.meta.url), 'utf8');
    for (const c of allCases) expect(readme, c.file).toContain(`\`${c.file}\``);
  });
});
