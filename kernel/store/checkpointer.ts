import { Worker } from 'node:worker_threads';
import { resolveLine, SQLITE_LINES } from '../platform/native.ts';

/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the COMMIT that
 * takes the WAL past 1,000 pages, on the committing thread: it copies the WAL's pages into the
 * database file and, at synchronous=NORMAL, fsyncs both. In the kernel that thread is the one
 * event loop: a single-row UPDATE of the use_queue table took 4–17 ms when it ran one, and a CPU
 * profile under the tenants bench caught the loop blocked 129 ms in one (bench/README.md, Tenants,
 * "checkpoints"). So the store's own connection never checkpoints (`wal_autocheckpoint = 0`) and
 * a worker thread with a connection of its own runs a PASSIVE checkpoint every CHECK_MS: it
 * copies what no reader still needs, never waits for the writer, and the writer rewinds the WAL
 * once everything in it was copied. If the worker dies, the store goes back to automatic
 * checkpoints on its own connection (`onFailure`).
 */

/** How often the worker checkpoints; an idle WAL costs it one read of the shared index. */
export const CHECK_MS = 250;

/** The worker's program: CommonJS, evaluated (the kernel may run from TypeScript sources). */
const PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('synchronous = NORMAL');
let busy = false;
const timer = setInterval(() => {
  if (busy) return;
  busy = true;
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    // SQLITE_BUSY: another checkpoint is running (another connection's); the next tick tries again.
    if (err && err.code !== 'SQLITE_BUSY') parentPort.postMessage({ failed: String(err.message || err) });
  } finally {
    busy = false;
  }
}, workerData.everyMs);
parentPort.on('message', (m) => {
  if (m !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export class Checkpointer {
  private readonly worker: Worker;
  private closed = false;

  /** `onFailure`: the worker failed or ended on its own; checkpoints are the store's again. */
  constructor(file: string, onFailure: (why: string) => void, everyMs = CHECK_MS) {
    this.worker = new Worker(PROGRAM, { eval: true, workerData: { file, driver: resolveLine(SQLITE_LINES), everyMs } });
    // It never keeps the process alive: a store left open does not hold up an exit.
    this.worker.unref();
    let failed = false;
    const fail = (why: string) => {
      if (failed || this.closed) return;
      failed = true;
      onFailure(why);
    };
    this.worker.on('message', (m: { failed?: string }) => {
      if (m.failed !== undefined) fail(m.failed);
    });
    this.worker.on('error', (err) => fail(err.message));
    this.worker.on('exit', (code) => fail(`the checkpoint thread ended (exit code ${code})`));
  }

  /** Stops the thread after its checkpoint in progress, if any; its connection closes first. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Held again while it closes: a process whose last work is this close (a CLI command) would
    // otherwise end here, with nothing else on its loop, before what follows the close runs.
    this.worker.ref();
    const ended = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage('close');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
    await this.worker.terminate();
  }
}
