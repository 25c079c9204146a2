import type Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { sqliteDriver } from './sqlite-driver.ts';
import type { DataStore, Migration, Queryable, RunResult } from './types.ts';

/**
 * The embedded store: one SQLite file in WAL mode. Ordinary commits use
 * synchronous=NORMAL (survive a process crash, may lose the last commits on power loss);
 * durable transactions are grouped and committed with synchronous=FULL, so one fsync
 * covers every durable commit that arrived in the same tick.
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

  constructor(file: string) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    const Driver = sqliteDriver();
    this.db = new Driver(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    this.db.exec('CREATE TABLE IF NOT EXISTS svc_migrations (owner TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (owner, version))');
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
   * One FULL-synchronous transaction for a group of durable jobs. A failing job rolls back
   * to its savepoint only; every promise settles after COMMIT returned, i.e. after the fsync.
   */
  private async commitGroup(jobs: DurableJob[]): Promise<void> {
    const outcomes: Array<{ ok: boolean; value: unknown }> = [];
    this.db.pragma('synchronous = FULL');
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
    } finally {
      this.db.pragma('synchronous = NORMAL');
    }
    jobs.forEach((job, i) => {
      const o = outcomes[i]!;
      if (o.ok) job.resolve(o.value);
      else job.reject(o.value);
    });
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
    await this.tail;
    this.db.close();
  }
}
