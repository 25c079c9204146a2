/**
 * The kernel's data store, as plugins see it. Narrow on purpose: a PostgreSQL
 * implementation must satisfy the same calls. SQL uses `?` placeholders and the
 * portable subset of SQL (INTEGER, TEXT, BLOB, REAL; no RETURNING, no UPSERT
 * beyond `INSERT ... ON CONFLICT (...) DO ...`, which both dialects speak).
 */
export interface Migration {
  /** Increasing from 1 within one owner. */
  version: number;
  /** One or more statements separated by semicolons. */
  up: string;
}

export interface RunResult {
  changes: number;
}

export interface Queryable {
  all<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  one<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
  run(sql: string, params?: readonly unknown[]): Promise<RunResult>;
}

export interface DataStore extends Queryable {
  readonly dialect: 'sqlite' | 'postgres';
  /** Applies the owner's migrations not applied yet, in order, each in a transaction. */
  migrate(owner: string, migrations: readonly Migration[]): Promise<void>;
  /**
   * Runs fn in a transaction. `durable: true` means the commit reaches stable storage
   * (fsync) before the promise resolves; implementations may group such commits.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, opts?: { durable?: boolean }): Promise<T>;
  /**
   * Resolves once every transaction committed before the call is on stable storage. With it a
   * writer can commit at once and wait for durability apart, committing more in the meantime.
   */
  sync(): Promise<void>;
  close(): Promise<void>;
}
