import type { Logger } from 'pino';
import type { DataStore, Queryable } from '../../../sdk/plugin/index.ts';

export type WriteOp = (tx: Queryable) => Promise<void>;

interface Pending {
  op: WriteOp;
  durable: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Every write of the engine goes through here, in order. Writes that arrive while the previous
 * transaction commits (or within the same event-loop turn) share the next transaction, so under
 * load one fsync covers many publishes (group commit). The transaction is durable when any of
 * its writes asked for durability.
 */
export class GroupCommitter {
  private pending: Pending[] = [];
  private running: Promise<void> | undefined;
  private scheduled = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly store: DataStore,
    private readonly log: Logger,
  ) {}

  write(op: WriteOp, durable: boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ op, durable, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves when nothing is queued or committing (tests, shutdown). */
  idle(): Promise<void> {
    if (!this.running && this.pending.length === 0 && !this.scheduled) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
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
        else for (const wake of this.idleWaiters.splice(0)) wake();
      });
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0);
      try {
        await this.commit(batch);
        for (const p of batch) p.resolve();
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
            p.resolve();
          } catch (e) {
            p.reject(e);
          }
        }
      }
    }
  }

  private commit(batch: Pending[]): Promise<void> {
    const durable = batch.some((p) => p.durable);
    return this.store.transaction(
      async (tx) => {
        for (const p of batch) await p.op(tx);
      },
      { durable },
    );
  }
}
