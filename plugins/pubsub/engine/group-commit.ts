import type { Logger } from 'pino';
import type { DataStore, Queryable } from '../../../sdk/plugin/index.ts';
import { CoalescedInserts, type InsertShapes } from './coalesced-inserts.ts';

export type WriteOp = (tx: Queryable) => Promise<void>;

interface Pending {
  op: WriteOp;
  durable: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Every write of the engine goes through here, in order. Writes that arrive while the previous
 * transaction commits (or within the same event-loop turn) share the next transaction. A
 * transaction commits without waiting for the disk; its durable writes resolve once the store's
 * sync() says the commit is on stable storage. Meanwhile the next transactions commit and their
 * flushes start beside it (group commit, pipelined: the event loop never waits for the disk).
 */
export class GroupCommitter {
  private pending: Pending[] = [];
  private running: Promise<void> | undefined;
  private scheduled = false;
  private syncing = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly store: DataStore,
    private readonly log: Logger,
    /** INSERTs whose rows a transaction sends together, as multi-row statements. */
    private readonly coalescable?: InsertShapes,
  ) {}

  write(op: WriteOp, durable: boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ op, durable, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves when nothing is queued, committing or waiting for the disk (tests, shutdown). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return !this.running && this.pending.length === 0 && !this.scheduled && this.syncing === 0;
  }

  private wakeIdle(): void {
    if (this.isIdle()) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  private schedule(): void {
    if (this.scheduled || this.running) return;
    this.scheduled = true;
    // setImmediate: every request parsed in this I/O phase joins the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.running = this.drain().finally(() => {
        this.running = undefined;
        if (this.pending.length > 0) this.schedule();
        else this.wakeIdle();
      });
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0);
      try {
        await this.commit(batch);
        this.settle(batch);
      } catch (err) {
        if (batch.length === 1) {
          batch[0]!.reject(err);
          continue;
        }
        // One bad write must not fail its neighbours: retry each alone.
        this.log.warn({ err, writes: batch.length }, 'pubsub: group commit failed, retrying writes one by one');
        for (const p of batch) {
          try {
            await this.commit([p]);
            this.settle([p]);
          } catch (e) {
            p.reject(e);
          }
        }
      }
    }
  }

  private commit(batch: Pending[]): Promise<void> {
    const shapes = this.coalescable;
    return this.store.transaction(async (tx) => {
      if (shapes === undefined) {
        for (const p of batch) await p.op(tx);
        return;
      }
      const inserts = new CoalescedInserts(tx, shapes);
      for (const p of batch) await p.op(inserts);
      await inserts.flush();
    });
  }

  /** Committed: the other writes are done; the durable ones once the disk has the commit. */
  private settle(batch: Pending[]): void {
    let durable: Pending[] | undefined;
    for (const p of batch) {
      if (p.durable) (durable ??= []).push(p);
      else p.resolve();
    }
    if (!durable) return;
    const waiting = durable;
    this.syncing++;
    this.store.sync().then(
      () => {
        for (const p of waiting) p.resolve();
      },
      (err: unknown) => {
        this.log.error({ err, writes: waiting.length }, 'pubsub: the store could not flush committed writes to disk');
        for (const p of waiting) p.reject(err);
      },
    ).finally(() => {
      this.syncing--;
      this.wakeIdle();
    });
  }
}
