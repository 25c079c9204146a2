import { Worker } from 'node:worker_threads';
import { resolveLine, SQLITE_LINES } from '../platform/native.ts';

/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the COMMIT that
 * takes the WAL past 1,000 pages, on the committing thread: it copies the WAL's pages into the
 * database file and, at synchronous=NORMAL, fsyncs both. In the kernel that thread is the one
 * event loop: a single-row UPDATE of the use_queue table took 4–17 ms when it ran one, and a CPU
 * profile under the tenants bench caught the loop blocked 129 ms in one (bench/README.md, Tenants).
 *
 * So a worker thread with a connection of its own runs PASSIVE checkpoints: they copy what no
 * reader still needs and never wait for the writer, every BUSY_MS while the WAL has pages left to
 * copy, every IDLE_MS once it has none. The writer rewinds the WAL at its next transaction when
 * everything in it was copied. Under steady writes that moment may never come (a commit lands
 * before each checkpoint ends), so the store's connection keeps SQLite's automatic checkpoint
 * with a high bar (`WAL_BOUND_PAGES`): when the WAL reaches it, the COMMIT checkpoints what the
 * thread has not copied yet, a few pages rather than a thousand, and the WAL starts over. The WAL
 * stays bounded whatever the thread does; if the thread dies, the store goes back to SQLite's own
 * checkpoints every 1,000 pages (`onFailure`).
 */

/** The store's own automatic checkpoint, the bound of the WAL while the thread runs: 40 MB of 4 KB pages. */
export const WAL_BOUND_PAGES = 10_000;

/** Between checkpoints while the WAL has pages to copy, and once it has none (a read of the shared index). */
export const BUSY_MS = 25;
export const IDLE_MS = 250;

/** The worker's program: CommonJS, evaluated (the kernel may run from TypeScript sources). */
const PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('synchronous = NORMAL');
let timer;
let closed = false;
function checkpoint() {
  let behind = false;
  try {
    // One row: busy (another checkpoint held the lock), log (frames in the WAL), checkpointed.
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    behind = r.busy !== 0 || r.checkpointed < r.log;
  } catch (err) {
    if (err && err.code !== 'SQLITE_BUSY') {
      parentPort.postMessage({ failed: String(err.message || err) });
      return;
    }
    behind = true;
  }
  if (!closed) timer = setTimeout(checkpoint, behind ? workerData.busyMs : workerData.idleMs);
}
timer = setTimeout(checkpoint, workerData.idleMs);
parentPort.on('message', (m) => {
  if (m !== 'close') return;
  closed = true;
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
`;

export interface CheckpointerTiming {
  busyMs: number;
  idleMs: number;
}

export class Checkpointer {
  private readonly worker: Worker;
  private closed = false;

  /** `onFailure`: the worker failed or ended on its own; checkpoints are the store's again. */
  constructor(file: string, onFailure: (why: string) => void, timing: CheckpointerTiming = { busyMs: BUSY_MS, idleMs: IDLE_MS }) {
    this.worker = new Worker(PROGRAM, { eval: true, workerData: { file, driver: resolveLine(SQLITE_LINES), ...timing } });
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
