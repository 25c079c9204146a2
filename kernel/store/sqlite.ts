import type Database from 'better-sqlite3';
import { closeSync, fdatasync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Checkpointer, type CheckpointerTiming, WAL_BOUND_PAGES } from './checkpointer.ts';
import { sqliteDriver } from './sqlite-driver.ts';
import { ChangeListeners, MAX_NOTIFY_PAYLOAD, type DataStore, type Migration, type Queryable, type RunResult } from '../../sdk/plugin/store.ts';

/** Open stores by file: notifications reach the other stores of the same file in this process (one node has one). */
const OPEN = new Map<string, Set<SqliteStore>>();

/**
 * Concurrent fdatasyncs of one WAL. More than one lets a commit's flush start while the previous
 * one is still on the disk, which shortens a durable publish's wait (docs/decisions/kernel.md).
 * Each takes a thread of libuv's pool (4 by default): three leave one to DNS lookups and files.
 */
const MAX_FLUSHES = 3;

/** How long a store is open before its WAL checkpoints move to a thread of their own (checkpointer.ts). */
export const CHECKPOINTER_AFTER_MS = 1000;

/** Tests shorten the checkpoint thread's timings and lower the WAL's bound. */
export interface SqliteStoreOptions {
  checkpointerAfterMs?: number;
  walBoundPages?: number;
  checkpointerTiming?: CheckpointerTiming;
}

/**
 * The embedded store: one SQLite file in WAL mode at synchronous=NORMAL, so a commit is a
 * write() of WAL frames (it survives a process crash, not yet a power loss). Durability is an
 * fdatasync of the WAL file, run off the event loop (libuv's thread pool) after the commit:
 * the loop keeps parsing requests and committing the next transactions while the disk
 * flushes, and one flush covers every commit made before it started (see sync()). This is
 * what synchronous=FULL does inside COMMIT, without blocking the process for the flush.
 */
interface DurableJob {
  run: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export class SqliteStore implements DataStore {
  readonly dialect = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  private tail: Promise<unknown> = Promise.resolve();
  private durableBatch: DurableJob[] | undefined;
  private readonly walFile: string | undefined;
  private walFd: number | undefined;
  /** Checkpoints of the WAL, in a thread of their own (checkpointer.ts); undefined without a WAL. */
  private checkpointer: Checkpointer | undefined;
  /** Until the thread starts (CHECKPOINTER_AFTER_MS). */
  private checkpointerTimer: NodeJS.Timeout | undefined;
  /**
   * Flushes in progress (at most MAX_FLUSHES), and the one queued for callers that found them all
   * busy. An array changed in place, not a Set rebuilt every few flushes (kernel/sandbox/id-table.ts says why).
   */
  private readonly flushing: Array<Promise<void>> = [];
  private queuedFlush: { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | undefined;
  private flushes = 0;
  private readonly listeners = new ChangeListeners((err, topic) => process.emitWarning(`store listener of '${topic}' failed: ${(err as Error).message}`));
  private readonly key: string | undefined;

  constructor(file: string, options: SqliteStoreOptions = {}) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    const Driver = sqliteDriver();
    this.db = new Driver(file);
    const wal = this.db.pragma('journal_mode = WAL', { simple: true }) === 'wal';
    // Without a WAL (an in-memory database, a file system SQLite cannot share memory on) every commit syncs itself.
    this.walFile = wal ? `${file}-wal` : undefined;
    this.db.pragma(wal ? 'synchronous = NORMAL' : 'synchronous = FULL');
    this.db.pragma('busy_timeout = 5000');
    // Not at once: a one-shot command (the CLI reading the queue) is done before then, and a
    // store that lives on takes its checkpoints off the loop from then on. Until then SQLite's own.
    if (wal) this.checkpointerTimer = setTimeout(() => this.checkpointOffTheLoop(file, options), options.checkpointerAfterMs ?? CHECKPOINTER_AFTER_MS).unref();
    this.db.pragma('foreign_keys = ON');
    this.db.exec('CREATE TABLE IF NOT EXISTS svc_migrations (owner TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (owner, version))');
    if (file !== ':memory:') {
      this.key = resolve(file);
      OPEN.set(this.key, (OPEN.get(this.key) ?? new Set()).add(this));
    }
  }

  /**
   * Checkpoints leave this connection for a thread of their own, but for the WAL's bound (what the
   * thread has not copied when the WAL reaches it); if that thread fails, they all come back.
   */
  private checkpointOffTheLoop(file: string, options: SqliteStoreOptions): void {
    this.checkpointerTimer = undefined;
    try {
      this.checkpointer = new Checkpointer(
        file,
        (why) => {
          this.checkpointer = undefined;
          if (this.db.open) this.db.pragma('wal_autocheckpoint = 1000');
          process.emitWarning(`store: WAL checkpoints are back on the event loop: ${why}`);
        },
        options.checkpointerTiming,
      );
    } catch (err) {
      process.emitWarning(`store: WAL checkpoints stay on the event loop: ${(err as Error).message}`);
      return;
    }
    this.db.pragma(`wal_autocheckpoint = ${options.walBoundPages ?? WAL_BOUND_PAGES}`);
  }

  /** Delivered on a later turn of the loop, as a notification from another process would be. */
  async notify(topic: string, payload = ''): Promise<void> {
    if (Buffer.byteLength(topic) + Buffer.byteLength(payload) > MAX_NOTIFY_PAYLOAD) throw new Error(`notification of '${topic}' too large: send ids, not data`);
    const others = [...(this.key === undefined ? [] : (OPEN.get(this.key) ?? []))].filter((s) => s !== this);
    setImmediate(() => {
      for (const store of others) store.listeners.deliver(topic, payload);
    });
  }

  /** A file has no connection to lose: onResync never runs. */
  listen(topic: string, onMessage: (payload: string) => void | Promise<void>, onResync?: () => void | Promise<void>): () => void {
    return this.listeners.add(topic, onMessage, onResync);
  }

  private prepare(sql: string): Database.Statement {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  private readonly direct: Queryable = {
    all: async <T>(sql: string, params: readonly unknown[] = []) => this.prepare(sql).all(...params) as T[],
    one: async <T>(sql: string, params: readonly unknown[] = []) => this.prepare(sql).get(...params) as T | undefined,
    run: async (sql: string, params: readonly unknown[] = []): Promise<RunResult> => ({ changes: this.prepare(sql).run(...params).changes }),
  };

  /** Statements outside a transaction wait for an open transaction to finish, so they never land inside it. */
  all<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    return this.serial(() => this.direct.all<T>(sql, params));
  }
  one<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    return this.serial(() => this.direct.one<T>(sql, params));
  }
  run(sql: string, params?: readonly unknown[]): Promise<RunResult> {
    return this.serial(() => this.direct.run(sql, params));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>, opts?: { durable?: boolean }): Promise<T> {
    if (!opts?.durable) return this.serial(() => this.inTransaction(fn));
    return new Promise<T>((resolve, reject) => {
      const job: DurableJob = { run: () => fn(this.direct), resolve: resolve as (v: unknown) => void, reject };
      if (this.durableBatch) {
        this.durableBatch.push(job);
        return;
      }
      this.durableBatch = [job];
      setImmediate(() => {
        const jobs = this.durableBatch ?? [];
        this.durableBatch = undefined;
        void this.serial(() => this.commitGroup(jobs));
      });
    });
  }

  /**
   * Resolves once every transaction committed before the call is on stable storage: an
   * fdatasync of the WAL begun after the call. Up to MAX_FLUSHES run at once, so a commit made
   * while one flush runs need not wait for it to end before its own begins (the disk works on
   * both); past that, callers share one queued flush, which starts as soon as one ends.
   */
  sync(): Promise<void> {
    if (this.walFile === undefined) return Promise.resolve();
    if (this.flushing.length < MAX_FLUSHES) return this.startFlush();
    if (!this.queuedFlush) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
      this.queuedFlush = { promise, resolve, reject };
    }
    return this.queuedFlush.promise;
  }

  /** Flushes completed (tests: durable commits went through sync()). */
  get flushCount(): number {
    return this.flushes;
  }

  private startFlush(): Promise<void> {
    const flush = new Promise<void>((resolve, reject) => {
      // A failed flush fails its waiters only, as a failed COMMIT does at synchronous=FULL.
      fdatasync(this.walDescriptor(), (err) => {
        this.flushing.splice(this.flushing.indexOf(flush), 1);
        // The queued flush takes the freed place at once, before any later caller could.
        const queued = this.queuedFlush;
        this.queuedFlush = undefined;
        if (queued) this.startFlush().then(queued.resolve, queued.reject);
        if (err) return reject(err);
        this.flushes++;
        resolve();
      });
    });
    this.flushing.push(flush);
    return flush;
  }

  /**
   * The WAL file, opened once: SQLite keeps the same file while its connection is open (a
   * checkpoint rewinds it, never replaces it), and fdatasync on any descriptor of a file flushes it.
   */
  private walDescriptor(): number {
    return (this.walFd ??= openSync(this.walFile!, 'r'));
  }

  /**
   * One transaction for a group of durable jobs, then one flush for all of them. A failing job
   * rolls back to its savepoint only; every promise settles after the flush. The serial chain
   * is released at COMMIT, so the next transactions commit while the flush runs.
   */
  private async commitGroup(jobs: DurableJob[]): Promise<void> {
    const outcomes: Array<{ ok: boolean; value: unknown }> = [];
    try {
      this.db.exec('BEGIN IMMEDIATE');
      for (const job of jobs) {
        this.db.exec('SAVEPOINT job');
        try {
          outcomes.push({ ok: true, value: await job.run() });
          this.db.exec('RELEASE job');
        } catch (err) {
          outcomes.push({ ok: false, value: err });
          this.db.exec('ROLLBACK TO job');
          this.db.exec('RELEASE job');
        }
      }
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      for (const job of jobs) job.reject(err);
      return;
    }
    this.sync().then(
      () =>
        jobs.forEach((job, i) => {
          const o = outcomes[i]!;
          if (o.ok) job.resolve(o.value);
          else job.reject(o.value);
        }),
      (err: unknown) => {
        for (const job of jobs) job.reject(err);
      },
    );
  }

  private async inTransaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = await fn(this.direct);
      this.db.exec('COMMIT');
      return result;
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
  }

  async migrate(owner: string, migrations: readonly Migration[]): Promise<void> {
    const done = new Set(
      (await this.all<{ version: number }>('SELECT version FROM svc_migrations WHERE owner = ?', [owner])).map((r) => r.version),
    );
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      await this.serial(async () => {
        this.db.exec('BEGIN IMMEDIATE');
        try {
          // Checked again under the write lock: another process on this file (the CLI) may have applied it meanwhile.
          if (this.prepare('SELECT 1 FROM svc_migrations WHERE owner = ? AND version = ?').get(owner, m.version)) {
            this.db.exec('COMMIT');
            return;
          }
          this.db.exec(m.up);
          this.prepare('INSERT INTO svc_migrations (owner, version) VALUES (?, ?)').run(owner, m.version);
          this.db.exec('COMMIT');
        } catch (err) {
          if (this.db.inTransaction) this.db.exec('ROLLBACK');
          throw new Error(`migration ${owner} v${m.version} failed: ${(err as Error).message}`);
        }
      });
    }
  }

  async close(): Promise<void> {
    this.listeners.clear();
    if (this.key !== undefined) OPEN.get(this.key)?.delete(this);
    if (OPEN.get(this.key ?? '')?.size === 0) OPEN.delete(this.key!);
    await this.tail;
    await Promise.allSettled([...this.flushing, this.queuedFlush?.promise]);
    clearTimeout(this.checkpointerTimer);
    await this.checkpointer?.close();
    this.checkpointer = undefined;
    this.db.close();
    if (this.walFd !== undefined) closeSync(this.walFd);
    this.walFd = undefined;
  }
}
