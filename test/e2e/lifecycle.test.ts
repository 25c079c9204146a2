import { connect, type Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, runCli, startCli, type CliServer } from '../helpers/cli.ts';
import { HeldCalls } from '../helpers/held-calls.ts';
import { waitFor } from '../helpers/wait.ts';

/**
 * Graceful shutdown of `svc start` (issue 15) over real sockets: SIGTERM stops accepting,
 * answers what is in flight, lets queued work that runs finish (or leaves it for the next start),
 * and exits 0; a second signal or the deadline exits 1 after logging what was cut.
 *
 * Services report each run to a sink (HeldCalls, an HTTP server in this process, reached through
 * an outgoing connection) and wait for its answer, so the test decides when a call finishes.
 */

interface Run {
  tag: string;
  attempt: number;
  original: string;
}
const sink = new HeldCalls<Run>();
const runs = sink.arrived;

const REPORT = `import { service, outgoing } from 'svc/sdk';
const sink = outgoing('sink');
async function report(ctx) {
  const d = ctx.delivery;
  const res = await sink.post(ctx.cid, { payload: { tag: ctx.input.tag, attempt: d ? d.attempt : 0, original: d ? d.cid : ctx.cid } });
  if (!res.ok) throw new Error('sink answered ' + res.status);
}
export default service({ limits: { timeoutMs: 60000 }, async handle(ctx) { await report(ctx); return { done: ctx.input.tag }; } });
`;

function config(opts: { drainMs?: number; stopWaitMs?: number } = {}): string {
  return `
server:
  data_dir: ./data
  services_dir: ./services
  drain_timeout_ms: ${opts.drainMs ?? 8000}
  admin: { enabled: false }
plugins:
  use-queue:
    config: { stop_wait_ms: ${opts.stopWaitMs ?? 4000} }
outgoing_rest:
  - ${sink.outgoing('sink')}
channel_rest:
  - { name: slow, url_path: /slow, service: report, method: POST, security: none }
  - { name: job, url_path: /job, service: report, method: POST, security: none, use_queue: true, delivery: { concurrency: 1 } }
`;
}

let server: CliServer | undefined;
beforeAll(async () => {
  await sink.start();
});
afterEach(async () => {
  if (server?.proc.exitCode === null && server.proc.signalCode === null) await server.stop('SIGKILL');
  sink.dropHeld();
});
afterAll(() => sink.close());

const heldRun = async (tag: string) => (await sink.waitHeld(tag))[0]!;
const release = (tag: string) => sink.release(tag);
const logLine = (msg: string) => waitFor(`log line '${msg}'`, () => server!.output().split('\n').find((l) => l.includes(`"msg":"${msg}`)));
const exited = (s: CliServer) => new Promise<number | null>((resolve) => (s.proc.exitCode !== null ? resolve(s.proc.exitCode) : s.proc.once('exit', (code) => resolve(code))));

function post(path: string, body: unknown): Promise<{ status: number; cid: string; json: Record<string, unknown> }> {
  return fetch(`${server!.url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }).then(async (res) => ({
    status: res.status,
    cid: res.headers.get('x-svc-cid') ?? '',
    json: (await res.json()) as Record<string, unknown>,
  }));
}

/** A raw connection: what the server sends, once it closes the connection. */
function rawConnection(url: string): { socket: Socket; received: Promise<string>; connected: Promise<void> } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
  const received = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
  const connected = new Promise<void>((resolve, reject) => socket.once('connect', () => resolve()).once('error', reject));
  return { socket, received, connected };
}

function refused(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const s = connect(Number(port), hostname);
    s.once('connect', () => (s.destroy(), resolve('connected')));
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

const queueList = (dir: string) => {
  const r = runCli(['queue', 'list', '--channel', 'job', '--json'], dir);
  expect(r.status, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as Array<{ cid: string; state: string; attempts: number }>).map((e) => [e.cid, e.state]);
};

describe('svc start: graceful shutdown', () => {
  it('SIGTERM: the request in flight completes, new connections are refused, a request arriving meanwhile gets 503 with its CID, exit 0', async () => {
    const dir = makeProject(config(), { 'report.js': REPORT });
    server = await startCli(dir);
    const inflight = post('/slow', { tag: 'inflight' });
    await heldRun('inflight');
    // A client that has begun a request (headers not finished) when the signal comes.
    const late = rawConnection(server.url);
    await late.connected;
    late.socket.write('POST /slow HTTP/1.1\r\nHost: svc\r\nContent-Type: application/json\r\n');
    await new Promise((r) => setTimeout(r, 100));

    const exit = exited(server);
    server.proc.kill('SIGTERM');
    await logLine('shutting down');
    await expect.poll(() => refused(server!.url), { timeout: 5_000 }).toBe('ECONNREFUSED');
    late.socket.write('Content-Length: 15\r\n\r\n{"tag":"late"}\n');
    const answer = await late.received;
    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    const cid = /\r\nx-svc-cid: (\w+)\r\n/i.exec(answer)?.[1];
    expect(cid).toBeTruthy();
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ result: 'Error', cid, details: 'Server is shutting down' });
    expect(runs.some((r) => r.tag === 'late')).toBe(false);

    expect(server.proc.exitCode).toBe(null); // still draining: the request in flight holds it
    release('inflight');
    expect(await inflight).toMatchObject({ status: 200, json: { done: 'inflight' } });
    expect(await exit).toBe(0);
    expect(server.output()).toContain('"msg":"svc stopped"');
  }, 60_000);

  it('SIGTERM with queued work: the attempt that runs finishes, nothing new starts, the rest waits for the next start', async () => {
    const dir = makeProject(config(), { 'report.js': REPORT });
    server = await startCli(dir);
    const first = await post('/job', { tag: 'q1' });
    const second = await post('/job', { tag: 'q2' });
    expect([first.status, second.status]).toEqual([200, 200]);
    await heldRun('q1');
    const exit = exited(server);
    server.proc.kill('SIGTERM');
    await logLine('shutting down');
    await new Promise((r) => setTimeout(r, 200));
    release('q1');
    expect(await exit).toBe(0);
    // q1 ran to its end and was processed; q2 (concurrency 1) never started and is kept.
    expect(runs.filter((r) => r.tag === 'q2')).toEqual([]);
    expect(queueList(dir)).toEqual([[second.cid, 'pending']]);

    // The next start runs it.
    server = await startCli(dir);
    expect(await heldRun('q2')).toMatchObject({ attempt: 1, original: second.cid });
    release('q2');
    await waitFor('the queue to empty', () => queueList(dir).length === 0 || undefined);
  }, 90_000);

  it('an attempt still running after stop_wait_ms is left running and runs again after the restart (at least once)', async () => {
    const stopWaitMs = 300;
    const dir = makeProject(config({ stopWaitMs }), { 'report.js': REPORT });
    server = await startCli(dir);
    const job = await post('/job', { tag: 'cut' });
    await heldRun('cut');
    const t0 = Date.now();
    const code = await server.stop('SIGTERM');
    // The attempt is held for good: exit 0, not the drain deadline's 1 (server.drain_timeout_ms,
    // 8 s), shows the stop went on without it, and it went on only after waiting stop_wait_ms
    // (less 50 ms for the two processes' clocks' rounding).
    expect(code, server.output()).toBe(0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(stopWaitMs - 50);
    expect(server.output()).not.toContain('shutdown deadline passed');
    expect(server.output()).toContain('queue: attempts still running at shutdown are left for the next start');
    expect(queueList(dir)).toEqual([[job.cid, 'running']]);
    sink.dropHeld();

    writeFileSync(join(dir, 'config', 'svc.yaml'), config());
    server = await startCli(dir);
    expect(await heldRun('cut')).toMatchObject({ attempt: 2, original: job.cid });
    release('cut');
    await waitFor('the queue to empty', () => queueList(dir).length === 0 || undefined);
  }, 90_000);

  it('a second SIGTERM exits at once with 1, logging the calls it cut', async () => {
    server = await startCli(makeProject(config(), { 'report.js': REPORT }));
    const inflight = post('/slow', { tag: 'forced' }).catch((err: Error) => err);
    const run = await heldRun('forced');
    const exit = exited(server);
    server.proc.kill('SIGTERM');
    await logLine('shutting down');
    server.proc.kill('SIGTERM');
    expect(await exit).toBe(1);
    // The call is held for good, so only the second signal or the drain deadline (8 s) could end
    // the process: the second signal's line, and no deadline line, show it did not wait.
    const line = JSON.parse(await logLine('second signal')) as Record<string, unknown>;
    expect(server.output()).not.toContain('shutdown deadline passed');
    expect(line).toMatchObject({ signal: 'SIGTERM', calls_in_flight: 1, queued_attempts: 0, calls: [{ service: 'report', channel: 'slow', cid: run.original, queued: false }] });
    expect(await inflight).toBeInstanceOf(Error);
  }, 60_000);

  it('past server.drain_timeout_ms it exits 1 with a log line naming what was cut', async () => {
    const drainMs = 2500;
    server = await startCli(makeProject(config({ drainMs }), { 'report.js': REPORT }));
    const inflight = post('/slow', { tag: 'stuck' }).catch((err: Error) => err);
    const run = await heldRun('stuck');
    const t0 = Date.now();
    expect(await server.stop('SIGTERM')).toBe(1);
    const took = Date.now() - t0;
    // The deadline is the claim. Its timer starts when the signal arrives, after t0, so it cannot
    // be early (50 ms for the two processes' clocks' rounding); the call is held for good, so
    // without the deadline the process would never exit. Twice the deadline leaves a loaded
    // machine room to write the log line and exit.
    expect(took).toBeGreaterThanOrEqual(drainMs - 50);
    expect(took).toBeLessThan(drainMs * 2);
    const line = JSON.parse(await logLine('shutdown deadline passed')) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 50, deadline_ms: drainMs, calls_in_flight: 1, calls: [{ service: 'report', cid: run.original }] });
    expect(line.connections).toBeGreaterThanOrEqual(1);
    expect(await inflight).toBeInstanceOf(Error);
  }, 60_000);

  it('Ctrl-C (SIGINT to the whole process group) drains too: the sandbox processes wait for the kernel', async () => {
    server = await startCli(makeProject(config(), { 'report.js': REPORT }), {}, { detached: true });
    const inflight = post('/slow', { tag: 'ctrl-c' });
    await heldRun('ctrl-c');
    const exit = exited(server);
    process.kill(-server.proc.pid!, 'SIGINT');
    await logLine('shutting down');
    await new Promise((r) => setTimeout(r, 200));
    release('ctrl-c');
    expect(await inflight).toMatchObject({ status: 200, json: { done: 'ctrl-c' } });
    expect(await exit).toBe(0);
  }, 60_000);
});
