import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';
import { isolatedVmEntry } from './ivm.ts';
import { Spawner, type SandboxProcess } from './spawner.ts';
import { Wire } from './wire.ts';
import { IdTable } from './id-table.ts';
import { readSandboxMessage, type InvokeRequest, type InvokeResult, type KernelMessage, type SandboxMessage, type ServiceMeta } from './protocol.ts';
import { newCpuWatch, type CpuWatch } from './demotion.ts';

/** One sandbox process as the pool sees it (pool.ts), and what starting one takes: its code bundle and environment. */

export type DeployOutcome = { ok: true; meta: ServiceMeta } | { ok: false; error: string };

const WORKER_SOURCE = fileURLToPath(new URL('./worker.ts', import.meta.url));

/**
 * The sandbox process's code as one plain JavaScript file, built once per kernel process.
 * Starting `node` on it takes about 0.15 s where loading the TypeScript through a loader took
 * 0.55 s, and that is how long the services of a crashed process wait for its replacement.
 */
let workerBundle: { dir: string; file: string; users: number } | undefined;

/** Starts the sandbox processes of every pool in this kernel process (spawner.ts); it goes with the bundle's last user. */
export const sandboxSpawner = new Spawner();
export function acquireWorkerBundle(): string {
  if (!workerBundle) {
    const out = buildSync({
      entryPoints: [WORKER_SOURCE],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      write: false,
      external: ['isolated-vm'],
    });
    // The bundle lives outside the project, so the native module is imported from where npm
    // installed the line for this Node (kernel/native.ts).
    const ivmUrl = pathToFileURL(isolatedVmEntry()).href;
    const code = out.outputFiles[0]!.text.replace(/from\s*"isolated-vm"/, `from ${JSON.stringify(ivmUrl)}`);
    if (!code.includes(ivmUrl)) throw new Error('sandbox worker bundle: isolated-vm import not found');
    const dir = mkdtempSync(join(tmpdir(), 'svc-sandbox-'));
    const file = join(dir, 'worker.mjs');
    writeFileSync(file, code, { mode: 0o600 });
    workerBundle = { dir, file, users: 0 };
  }
  workerBundle.users++;
  return workerBundle.file;
}
/** Resolves once the spawner, when this was the bundle's last user, has left. */
export function releaseWorkerBundle(): Promise<void> {
  if (workerBundle && --workerBundle.users === 0) {
    const stopped = sandboxSpawner.stop();
    rmSync(workerBundle.dir, { recursive: true, force: true });
    workerBundle = undefined;
    return stopped;
  }
  return Promise.resolve();
}

/**
 * Sandbox processes get a minimal environment: the kernel's may hold secrets (`${ENV}` values
 * of the config), and nothing in a sandbox needs them.
 */
export function sandboxEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { NODE_OPTIONS: '' };
  for (const name of ['PATH', 'TMPDIR', 'TZ', 'LANG', 'SVC_WIRE_STATS']) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

export interface PendingCall {
  id: number;
  request: InvokeRequest;
  /** When its time limit ends, as the kernel counts it (the sandbox starts counting a little later). */
  ends: number;
  /** When the kernel answers it whatever the sandbox does. */
  deadline: number;
  worker: SandboxWorker | undefined;
  /** It made host calls: their tally is closed when it ends. */
  calledHost: boolean;
  resolve: (r: InvokeResult) => void;
  reject: (e: unknown) => void;
  /** Its depth in an invoke chain (0: from a channel or the queue). */
  depth: number;
  /** Its own time limit, when below its service's (an invoked call gets at most its caller's remaining time). */
  limitMs: number | undefined;
  /** The process its caller runs in (an invoked call): used only when no other can take it. */
  avoid: SandboxWorker | undefined;
  /** Its tenant, in the tenants' shared group (fair.ts); undefined elsewhere. */
  tenant: string | undefined;
  /** Host calls it waits on: while it waits it runs no code, and its isolate's thread may be free. */
  parked: number;
  /** Held by the fair shares of the tenants' shared group, not sent yet. */
  held: boolean;
}

export type DeployKind = 'probe' | 'spread' | 'replay';

/** One sandbox process: a home slot, or a probation process that runs one service alone. */
export class SandboxWorker {
  readonly wire: Wire;
  state: 'starting' | 'ready' | 'dead' = 'starting';
  readonly inflight = new IdTable<PendingCall>();
  /** Deploys sent and not answered, in the order the process runs them. */
  readonly deploys = new Map<number, { name: string; kind: DeployKind; done: (o: DeployOutcome) => void }>();
  /** Service versions this process holds. */
  readonly holds = new Map<string, number>();
  /**
   * Since when (pool clock) the process has owed an answer without saying anything at all;
   * undefined once it is heard. Set when a call is sent to it, and by the pool's sweep for calls
   * still in flight after it was last heard. A process with nothing to do owes nothing, so a long
   * quiet spell never makes it look wedged.
   */
  owedSince: number | undefined;
  /** Stopped on purpose (probation ended, replaced after a load): its exit is not a crash. */
  retiring = false;
  /** Calls sent to it so far: the pool's sweep tells from it whether the process was idle. */
  sent = 0;
  /** `sent` when the sweep last looked, and since when it has not changed. */
  seenSent = 0;
  quietSince = 0;
  /** Resident MB when it became ready (RecyclePolicy). */
  readyMb: number | undefined;
  /** Started to take over a home slot once ready; not a home until then. */
  successor = false;
  /** A successor was started for it: it is never recycled twice. */
  recycled = false;
  /**
   * In the tenants' shared group: calls running (not waiting on a host call) by service; a service with any is a busy isolate, a thread (fair.ts).
   * A service's count stays at 0 rather than being deleted, so the map is not rebuilt per call (id-table.ts says why that costs).
   */
  readonly busy = new Map<string, number>();
  /** Its CPU readings, for demotion (demotion.ts); set by the pool when it starts the process. */
  cpu: CpuWatch = newCpuWatch(false);

  constructor(
    readonly slot: number | undefined,
    readonly alone: string | undefined,
    readonly child: SandboxProcess,
    onMessage: (w: SandboxWorker, m: SandboxMessage, body: string) => void,
    onViolation: (w: SandboxWorker, why: string) => void,
    maxLine: number,
  ) {
    this.wire = new Wire(undefined, {
      maxLine,
      onViolation: (why) => onViolation(this, why),
      onMessage: (header, body) => {
        this.owedSince = undefined;
        const message = readSandboxMessage(header);
        if (message) onMessage(this, message, body);
        else onViolation(this, 'a message of unknown shape');
      },
    });
    child.onChannel((channel) => {
      // A process that dies with data unread on the pipe resets it; its exit is handled in 'exit'.
      channel.on('error', () => undefined);
      this.wire.attach(channel);
    });
  }

  send(message: KernelMessage, body?: string, raw?: string): void {
    this.wire.send(message, body, raw);
  }

  /** A call's message (`{ t: 'call', id, svc, d?, ms? }`), its header written without JSON.stringify. */
  sendCall(call: PendingCall, body: string, raw: string | undefined): void {
    const nesting = call.depth ? ',"d":' + call.depth + (call.limitMs !== undefined ? ',"ms":' + call.limitMs : '') : '';
    this.wire.sendHeaderJson('{"t":"call","id":' + call.id + ',"svc":' + JSON.stringify(call.request.service) + nesting + '}', body, raw);
  }

  get live(): boolean {
    return this.state !== 'dead';
  }
}
