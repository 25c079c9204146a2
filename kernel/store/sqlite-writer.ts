import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import type { WriteStatement } from '../../sdk/plugin/store.ts';
import type { WriterBatch, WriterClose, WriterOptions, WriterReply } from './writer-protocol.ts';

const THREAD_SOURCE = fileURLToPath(new URL('./writer-thread.ts', import.meta.url));

/** The thread's code as one CommonJS text, built once per process (as the sandbox's bundle is). */
let threadCode: string | undefined;
function writerThreadCode(): string {
  return (threadCode ??= buildSync({
    entryPoints: [THREAD_SOURCE],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    write: false,
    logLevel: 'silent',
  }).outputFiles[0]!.text);
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

/** One started thread and what it was sent: a new thread starts knowing no statement text. */
class WriterThread {
  readonly worker: Worker;
  readonly texts = new Map<string, number>();
  readonly waiting = new Map<number, Waiter>();
  nextId = 1;

  constructor(options: WriterOptions, onStop: (thread: WriterThread, err: Error) => void) {
    // No execArgv: the thread needs no loader or flag of the kernel's.
    this.worker = new Worker(writerThreadCode(), { eval: true, workerData: options, execArgv: [] });
    // Referenced only while a batch is out, so an idle store never holds a process open.
    this.worker.unref();
    this.worker.on('message', (reply: WriterReply) => this.settle(reply));
    this.worker.on('error', (err) => onStop(this, err));
    this.worker.on('exit', (code) => onStop(this, new Error(`the store's writer thread exited (code ${code})`)));
  }

  send(statements: readonly WriteStatement[]): Promise<void> {
    const batch: WriterBatch = { id: this.nextId++, texts: [], statements: [] };
    for (const [sql, params] of statements) {
      let n = this.texts.get(sql);
      if (n === undefined) {
        n = this.texts.size;
        this.texts.set(sql, n);
        batch.texts.push([n, sql]);
      }
      batch.statements.push(n, params ?? []);
    }
    return new Promise<void>((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(batch.id, { resolve, reject });
      this.worker.postMessage(batch);
    });
  }

  private settle(reply: WriterReply): void {
    const waiter = this.waiting.get(reply.id);
    if (!waiter) return;
    this.waiting.delete(reply.id);
    if (this.waiting.size === 0) this.worker.unref();
    if (reply.error) waiter.reject(Object.assign(new Error(reply.error.message), reply.error.code ? { code: reply.error.code } : {}));
    else waiter.resolve();
  }

  failAll(err: Error): void {
    for (const waiter of this.waiting.values()) waiter.reject(err);
    this.waiting.clear();
  }
}

/**
 * Write batches of the SQLite store, run on a thread of their own with its own connection to
 * the file (WAL mode: the store's connection keeps reading meanwhile). The store calls run()
 * inside its serial chain, so no statement of its connection overlaps a batch and neither
 * connection ever waits for the other's write lock. Started on the first batch; a thread that
 * stops fails its batches in flight, and the next batch starts a new one.
 */
export class SqliteWriter {
  private thread: WriterThread | undefined;

  constructor(private readonly options: WriterOptions) {}

  run(statements: readonly WriteStatement[]): Promise<void> {
    const thread = (this.thread ??= new WriterThread(this.options, (t, err) => this.stopped(t, err)));
    return thread.send(statements);
  }

  private stopped(thread: WriterThread, err: Error): void {
    if (this.thread === thread) this.thread = undefined;
    thread.failAll(err);
  }

  /** Closes the thread's connection and waits for the thread to end (call with no batch in flight). */
  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = undefined;
    if (!thread) return;
    const exited = new Promise<void>((resolve) => thread.worker.once('exit', () => resolve()));
    thread.worker.postMessage({ close: true } satisfies WriterClose);
    await exited;
  }
}

