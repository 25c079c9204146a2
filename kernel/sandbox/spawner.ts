import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';

/**
 * Sandbox processes are started by a small process of their own, the spawner, not by the kernel.
 *
 * Why: `child_process.spawn` blocks its caller's event loop until the new process has called
 * exec (libuv forks, then waits on a pipe for the exec). On a busy machine that took the kernel
 * 15–20 ms a process, and a crash shared by several services starts several at once (a home and a
 * probation process per suspect): a tenant's crash loop stalled every other tenant's requests
 * (bench/README.md, Tenants). The spawner takes those stalls; the kernel only sends it a message.
 *
 * The spawner starts each process with a pipe on fd 3, as the kernel used to, and hands the
 * kernel's end to the kernel over its IPC channel (a socket passed with SCM_RIGHTS); it reports
 * each exit, and sends the signals the kernel asks for (it knows when a process is gone, so a
 * signal never reaches a process id used again). It holds nothing else: when the kernel goes, its
 * IPC channel closes and it kills what it started, then leaves.
 */

/** What the pool holds of a sandbox process: a ChildProcess's shape, as far as the pool uses it. */
export interface SandboxProcess {
  /** Known once the spawner has started it (before its first message can arrive). */
  readonly pid: number | undefined;
  /** Its exit code once it has exited (null while it runs, or when a signal ended it). */
  readonly exitCode: number | null;
  /** Sends a signal; false once it has exited. */
  kill(signal: NodeJS.Signals): boolean;
  on(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  once(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  /** Calls back with the kernel's end of the process's pipe (fd 3 in the process), once it is here. */
  onChannel(listener: (channel: Socket) => void): void;
}

/** What `ps` shows for the spawner. */
export const SPAWNER_TITLE = 'svc-spawner';

/** How long stop() waits for the spawner to leave: it kills its processes and leaves once they are reaped, or after 2 s. */
const STOP_WAIT_MS = 3_000;

/** The spawner's program: plain JavaScript run with `node -e`, no file and no loader. */
const SPAWNER_PROGRAM = `
process.title = '${SPAWNER_TITLE}';
const { spawn } = require('node:child_process');
const { setPriority } = require('node:os');
const children = new Map();
const send = (m, h) => { if (process.connected) process.send(m, h, () => undefined); };
process.on('message', (m) => {
  if (m.t === 'spawn') {
    let child;
    try {
      child = spawn(m.exec, m.args, { stdio: ['ignore', 'inherit', 'inherit', 'pipe'], env: m.env });
    } catch (err) {
      return send({ t: 'error', id: m.id, message: String(err && err.message) });
    }
    child.on('error', (err) => send({ t: 'error', id: m.id, message: String(err && err.message) }));
    if (child.pid === undefined) return;
    // Lowered as soon as it exists: Node's start-up (tens of ms of CPU) then runs below the kernel too.
    if (m.nice) {
      try { setPriority(child.pid, m.nice); } catch {}
    }
    children.set(m.id, child);
    child.on('exit', (code, signal) => {
      children.delete(m.id);
      send({ t: 'exit', id: m.id, code, signal });
      if (!process.connected && children.size === 0) process.exit(0);
    });
    send({ t: 'spawned', id: m.id, pid: child.pid }, child.stdio[3]);
  } else if (m.t === 'kill') {
    const child = children.get(m.id);
    if (child) child.kill(m.signal);
  }
});
// Signals to the process group (Ctrl-C, a service manager's SIGTERM) are the kernel's to act on:
// it drains, then its sandbox processes stop, then its IPC closes and this leaves.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => undefined);
// The kernel is gone: kill what it started, and leave once they are reaped (orphans would be
// left to an init that may never reap them), or after 2 s.
process.on('disconnect', () => {
  if (children.size === 0) process.exit(0);
  for (const child of children.values()) child.kill('SIGKILL');
  setTimeout(() => process.exit(0), 2000);
});
`;

type SpawnerMessage =
  | { t: 'spawned'; id: number; pid: number }
  | { t: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { t: 'error'; id: number; message: string };

class RemoteProcess extends EventEmitter implements SandboxProcess {
  pid: number | undefined;
  exitCode: number | null = null;
  exited = false;
  channel: Socket | undefined;
  private channelListener: ((channel: Socket) => void) | undefined;

  constructor(
    readonly id: number,
    private readonly spawner: Spawner,
  ) {
    super();
  }

  kill(signal: NodeJS.Signals): boolean {
    if (this.exited) return false;
    return this.spawner.signal(this.id, signal);
  }

  onChannel(listener: (channel: Socket) => void): void {
    if (this.channel) listener(this.channel);
    else this.channelListener = listener;
  }

  arrived(pid: number, channel: Socket): void {
    this.pid = pid;
    this.channel = channel;
    this.channelListener?.(channel);
    this.channelListener = undefined;
  }

  ended(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exited) return;
    this.exited = true;
    this.exitCode = code;
    // A process that ended before its pipe arrived (it could not be started): the pool still sees an exit.
    this.emit('exit', code, signal);
  }
}

export class Spawner {
  private proc: ChildProcess | undefined;
  private nextId = 1;
  private readonly running = new Map<number, RemoteProcess>();

  /**
   * Starts `exec args` with the given environment, through the spawner (started on first use, and
   * again if it died); with `nice`, at that CPU priority from its start (its main thread: the
   * threads it starts afterwards inherit it).
   */
  spawn(exec: string, args: string[], env: NodeJS.ProcessEnv, nice?: number): SandboxProcess {
    // A spawner whose channel closed is gone, whether or not its exit has been heard yet.
    if (this.proc && !this.proc.connected) {
      this.proc = undefined;
      this.lost();
    }
    const proc = this.proc ?? this.start();
    const child = new RemoteProcess(this.nextId++, this);
    this.running.set(child.id, child);
    proc.send({ t: 'spawn', id: child.id, exec, args, env, nice });
    return child;
  }

  /** The spawner's own process id, while it runs (its CPU is the kernel's, for benchmarks). */
  pid(): number | undefined {
    return this.proc?.pid;
  }

  /** Process ids the spawner reported and that have not exited. */
  pids(): number[] {
    return [...this.running.values()].flatMap((c) => (c.pid === undefined ? [] : [c.pid]));
  }

  signal(id: number, signal: NodeJS.Signals): boolean {
    if (!this.proc?.connected) return false;
    this.proc.send({ t: 'kill', id, signal });
    return true;
  }

  /**
   * Lets the spawner go (it kills what it still runs); the next spawn starts another. Resolves once
   * it has exited (at most STOP_WAIT_MS): the kernel reaps it. A kernel that exits first leaves it
   * to init, and where init is not a reaper (a container's shell) each restart left a zombie.
   */
  stop(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    const exited =
      proc && proc.exitCode === null && proc.signalCode === null
        ? new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, STOP_WAIT_MS);
            proc.once('exit', () => (clearTimeout(timer), resolve()));
          })
        : Promise.resolve();
    if (proc?.connected) proc.disconnect();
    this.lost();
    return exited;
  }

  private start(): ChildProcess {
    // Small and quiet: it runs no user code and holds only its children's handles.
    const proc = spawn(process.execPath, ['--max-old-space-size=32', '-e', SPAWNER_PROGRAM], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: '' },
    });
    proc.on('message', (m: SpawnerMessage, handle: unknown) => this.onMessage(m, handle as Socket | undefined));
    proc.on('error', () => undefined);
    proc.on('exit', () => {
      if (this.proc !== proc) return;
      this.proc = undefined;
      this.lost();
    });
    // The kernel's own exit must not wait for the spawner, nor the spawner keep the event loop alive.
    proc.unref();
    (proc.channel as { unref?: () => void } | undefined)?.unref?.();
    this.proc = proc;
    return proc;
  }

  private onMessage(m: SpawnerMessage, handle: Socket | undefined): void {
    const child = this.running.get(m.id);
    if (!child) {
      handle?.destroy();
      return;
    }
    if (m.t === 'spawned' && handle) child.arrived(m.pid, handle);
    else if (m.t === 'exit') {
      this.running.delete(m.id);
      child.ended(m.code, m.signal);
    } else if (m.t === 'error') {
      this.running.delete(m.id);
      child.emit('error', new Error(m.message));
      child.ended(null, null);
    }
  }

  /**
   * The spawner is gone (it died, or was let go): the processes it started cannot be watched
   * any more, so they are stopped, and each is reported as having exited.
   */
  private lost(): void {
    for (const child of this.running.values()) {
      if (child.pid !== undefined) {
        try {
          process.kill(child.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      child.channel?.destroy();
      child.ended(null, 'SIGKILL');
    }
    this.running.clear();
  }
}
