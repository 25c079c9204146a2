import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { SvcError, type ErrorCode } from '../errors.ts';
import { Wire } from './wire.ts';
import type { InvokeRequest, InvokeResult, ServiceMeta } from './protocol.ts';

export interface SandboxCaps {
  /** Calls in flight on one sandbox process before new calls go to the next one. */
  spillAt: number;
  defaultMemoryMb: number;
  maxMemoryMb: number;
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  maxOutputBytes: number;
}

/** Answers a host call the sandbox forwarded; resolves with the reply envelope as JSON, never rejects. */
export type HostCallHandler = (op: string, argsJson: string, invocation: InvokeRequest) => Promise<string>;

export type DeployOutcome = { ok: true; meta: ServiceMeta } | { ok: false; error: string };

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/** Past this many deaths a minute a worker is restarted after a short delay, so a crash loop cannot spin a core. */
const CRASH_BURST = 20;

/**
 * Sandbox processes get a minimal environment: the kernel's may hold secrets (`${ENV}` values
 * of the config), and nothing in a sandbox needs them.
 */
function sandboxEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { NODE_OPTIONS: '' };
  for (const name of ['PATH', 'TMPDIR', 'TZ', 'LANG', 'SVC_WIRE_STATS']) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

function homeIndex(service: string, workers: number): number {
  let h = 0;
  for (let i = 0; i < service.length; i++) h = (h * 31 + service.charCodeAt(i)) | 0;
  return Math.abs(h) % workers;
}

interface Pending {
  request: InvokeRequest;
  resolve: (r: InvokeResult) => void;
  reject: (e: unknown) => void;
}

class SandboxWorker {
  readonly wire: Wire;
  readonly inflight = new Map<number, Pending>();
  readonly deploys = new Map<string, (o: DeployOutcome) => void>();
  ready: Promise<void>;
  isReady = false;
  alive = true;
  private markReady!: () => void;

  constructor(
    readonly index: number,
    readonly child: ChildProcess,
    onMessage: (w: SandboxWorker, header: Record<string, unknown>, body: string) => void,
  ) {
    this.ready = new Promise((r) => (this.markReady = r));
    const channel = child.stdio[3] as Socket;
    // The channel closes as the process dies, before 'exit' is seen: route nothing more to it.
    channel.on('close', () => (this.alive = false));
    this.wire = new Wire(channel, (h, b) => {
      if (h.t === 'ready') {
        this.isReady = true;
        this.markReady();
      }
      else onMessage(this, h, b);
    });
  }
}

/**
 * A supervised pool of sandbox processes. Requests go to the least busy live worker;
 * a worker that dies fails only the calls it was running and is replaced, and every
 * deployed service is deployed to its replacement.
 */
export class SandboxPool {
  private readonly workers: Array<SandboxWorker | undefined> = [];
  private readonly services = new Map<string, { file: string; code: string }>();
  private readonly deaths: number[] = [];
  private nextId = 1;
  private closing = false;
  private sdkCode = '';

  constructor(
    private readonly size: number,
    private readonly caps: SandboxCaps,
    private readonly log: Logger,
    private readonly hostCall: HostCallHandler,
  ) {}

  async start(sdkCode: string): Promise<void> {
    this.sdkCode = sdkCode;
    for (let i = 0; i < this.size; i++) this.workers[i] = this.spawn(i);
    await Promise.all(this.workers.map((w) => w!.ready));
  }

  private spawn(index: number): SandboxWorker {
    // SVC_SANDBOX_NODE_ARGS adds Node flags to sandbox processes (diagnostics, e.g. --cpu-prof).
    const extra = process.env.SVC_SANDBOX_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    const child = spawn(process.execPath, ['--no-node-snapshot', ...extra, '--import', TSX, WORKER], {
      stdio: ['ignore', 'inherit', 'inherit', 'pipe'],
      env: sandboxEnv(),
    });
    const worker = new SandboxWorker(index, child, (w, h, b) => this.onMessage(w, h, b));
    worker.wire.send({ t: 'init', caps: this.caps }, JSON.stringify(this.sdkCode));
    for (const [name, s] of this.services) worker.wire.send({ t: 'deploy', name, file: s.file }, JSON.stringify(s.code));
    child.on('exit', (code, signal) => this.onExit(worker, code, signal));
    return worker;
  }

  private onExit(worker: SandboxWorker, code: number | null, signal: NodeJS.Signals | null): void {
    worker.alive = false;
    for (const [, p] of worker.inflight) p.reject(new SvcError('SANDBOX_CRASHED'));
    worker.inflight.clear();
    for (const [, done] of worker.deploys) done({ ok: false, error: 'sandbox process exited during deploy' });
    worker.deploys.clear();
    if (this.closing) return;
    this.log.error({ worker: worker.index, code, signal }, 'sandbox process died; restarting it');
    const now = Date.now();
    this.deaths.push(now);
    while (this.deaths.length && this.deaths[0]! < now - 60_000) this.deaths.shift();
    const delay = this.deaths.length > CRASH_BURST ? Math.min(1_000, 20 * this.deaths.length) : 0;
    setTimeout(() => {
      if (!this.closing) this.workers[worker.index] = this.spawn(worker.index);
    }, delay).unref();
  }

  private onMessage(worker: SandboxWorker, header: Record<string, unknown>, body: string): void {
    switch (header.t) {
      case 'result': {
        const id = header.id as number;
        const pending = worker.inflight.get(id);
        if (!pending) return;
        worker.inflight.delete(id);
        if (header.fail) pending.reject(new SvcError(header.fail as ErrorCode, (header.message as string | undefined) ?? undefined));
        else pending.resolve(JSON.parse(body) as InvokeResult);
        return;
      }
      case 'hostcall': {
        const pending = worker.inflight.get(header.id as number);
        const seq = header.seq as number;
        const reply = pending
          ? this.hostCall(header.op as string, body, pending.request)
          : Promise.resolve(JSON.stringify({ ok: false, error: { kind: 'Error', status: 500, message: 'request already finished' } }));
        void reply.then((json) => worker.alive && worker.wire.send({ t: 'hostreply', id: header.id, seq }, json));
        return;
      }
      case 'deployed': {
        const done = worker.deploys.get(header.name as string);
        worker.deploys.delete(header.name as string);
        done?.(header.ok ? { ok: true, meta: header.meta as ServiceMeta } : { ok: false, error: header.error as string });
        return;
      }
    }
  }

  private live(): SandboxWorker[] {
    return this.workers.filter((w): w is SandboxWorker => !!w && w.alive);
  }

  /** The live worker with the fewest calls in flight; waits a little when none is live (restart). */
  private async anyLive(): Promise<SandboxWorker> {
    for (let attempt = 0; attempt < 100; attempt++) {
      let best: SandboxWorker | undefined;
      for (const w of this.workers) if (w?.alive && (!best || w.inflight.size < best.inflight.size)) best = w;
      if (best) {
        await best.ready;
        return best;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new SvcError('SERVICE_UNAVAILABLE', 'no sandbox process is running');
  }

  private deployOn(worker: SandboxWorker, name: string, file: string, code: string): Promise<DeployOutcome> {
    return new Promise((resolve) => {
      worker.deploys.set(name, resolve);
      worker.wire.send({ t: 'deploy', name, file }, JSON.stringify(code));
    });
  }

  /**
   * Compiles on one worker first; only a service that compiled replaces the running version
   * everywhere. A failure leaves the last good version in place.
   */
  async deploy(name: string, file: string, code: string): Promise<DeployOutcome> {
    const probe = await this.anyLive();
    const outcome = await this.deployOn(probe, name, file, code);
    if (!outcome.ok) return outcome;
    this.services.set(name, { file, code });
    await Promise.all(this.live().filter((w) => w !== probe).map((w) => w.ready.then(() => this.deployOn(w, name, file, code))));
    return outcome;
  }

  undeploy(name: string): void {
    this.services.delete(name);
    for (const w of this.live()) w.wire.send({ t: 'undeploy', name });
  }

  invoke(request: InvokeRequest): Promise<InvokeResult> {
    const worker = this.readyWorker(request.service);
    return worker ? this.send(worker, request) : this.anyLive().then((w) => this.send(w, request));
  }

  /**
   * A live, ready worker without waiting (the usual case). Each service has a home process
   * (by a hash of its name): its calls batch there, into one isolate, and a service that crashes
   * its process takes down only the services at home there. Past `spillAt` calls in flight at
   * home, or when home is down, the least busy other process takes the call.
   */
  private readyWorker(service: string): SandboxWorker | undefined {
    const home = this.workers[homeIndex(service, this.workers.length)];
    if (home?.alive && home.isReady && home.inflight.size < this.caps.spillAt) return home;
    let best: SandboxWorker | undefined;
    for (const w of this.workers) if (w?.alive && w.isReady && (!best || w.inflight.size < best.inflight.size)) best = w;
    return best;
  }

  private send(worker: SandboxWorker, request: InvokeRequest): Promise<InvokeResult> {
    const id = this.nextId++;
    // callId goes first so the isolate can route host calls; the rest is the request as it is.
    const json = JSON.stringify(request);
    const wireRequest = `{"callId":${id},${json.slice(1)}`;
    return new Promise<InvokeResult>((resolve, reject) => {
      worker.inflight.set(id, { request, resolve, reject });
      worker.wire.send({ t: 'call', id, svc: request.service }, wireRequest);
    });
  }

  /** Process ids of the live workers (tests and diagnostics). */
  pids(): number[] {
    return this.live().map((w) => w.child.pid ?? 0);
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(
      this.workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (!w || !w.alive) return resolve();
            w.child.once('exit', () => resolve());
            w.child.kill('SIGTERM');
          }),
      ),
    );
  }
}
