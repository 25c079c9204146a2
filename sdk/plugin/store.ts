import type { Logger } from 'pino';

/**
 * The data store contract, owned by the plugin SDK: plugins use a store through it, and store
 * strategies (the kernel's embedded SQLite, the postgres plugin) implement it. Narrow on purpose,
 * so each strategy can satisfy every call. SQL uses `?` placeholders and the subset both SQLite and
 * PostgreSQL speak: `INSERT ... ON CONFLICT (...) DO ...`, no RETURNING, no INSERT OR IGNORE.
 * Column types differ between the dialects: write DDL with `sqlTypes(store.dialect)`.
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

export type Dialect = 'sqlite' | 'postgres';

export interface Queryable {
  all<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  one<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
  run(sql: string, params?: readonly unknown[]): Promise<RunResult>;
}

/**
 * Values read back are the same on every strategy: integers as numbers, BLOB/BYTEA as Buffer,
 * truth values (comparisons) as 1 or 0. Pass truth values as 1 or 0 too (SQLite refuses
 * booleans). Integers beyond 2^53 are not portable: SQLite rounds them, PostgreSQL gives a
 * bigint. A statement that fails inside a transaction fails the whole transaction on
 * PostgreSQL: use ON CONFLICT rather than catching the error and going on.
 */
export interface DataStore extends Queryable {
  readonly dialect: Dialect;
  /**
   * Applies the owner's migrations not applied yet, in order, each in a transaction. Safe when
   * several processes on one database start together: one applies, the others wait and skip.
   */
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
  /**
   * Tells the other nodes on this database that something under `topic` changed (plugin SDK 1.2).
   * Call it after the transaction that made the change committed, so a node that reacts reads
   * the new rows. Delivered to the listeners of every other store opened on the same database
   * (the other nodes, and a CLI process writing with no server), not to this store's own: the
   * node that made a change has applied it already. At most once, in the order sent by one
   * store; a node that was disconnected learns what it missed through `onResync`, not by
   * replay. `payload` names what changed (ids, kinds), never data: at most
   * MAX_NOTIFY_PAYLOAD bytes with the topic. On the SQLite store (one node) it reaches other
   * stores of the same file in this process only.
   */
  notify(topic: string, payload?: string): Promise<void>;
  /**
   * Calls `onMessage` with the payload of each notification of `topic` from another store, in
   * arrival order, without waiting for a returned promise (a listener whose calls must not
   * overlap queues them itself). `onResync` runs after the store reconnected to the
   * notifications: some may have been missed, so a listener reloads everything it caches from
   * the store. Returns the unsubscribe. Errors thrown by either are logged and dropped.
   */
  listen(topic: string, onMessage: (payload: string) => void | Promise<void>, onResync?: () => void | Promise<void>): () => void;
  close(): Promise<void>;
}

/** The largest notification: PostgreSQL refuses payloads of 8000 bytes and more; what remains after the envelope. */
export const MAX_NOTIFY_PAYLOAD = 7000;

/**
 * Listeners by topic: what every store strategy needs to hand out notifications. Calls are made
 * in arrival order without waiting for a returned promise, so one slow listener (a service that
 * compiles) delays no other; a listener whose calls must not overlap queues them itself.
 */
export class ChangeListeners {
  private readonly byTopic = new Map<string, Set<ChangeListener>>();

  constructor(private readonly onError: (err: unknown, topic: string) => void) {}

  add(topic: string, onMessage: ChangeListener['onMessage'], onResync?: ChangeListener['onResync']): () => void {
    const listener: ChangeListener = { onMessage, onResync };
    let set = this.byTopic.get(topic);
    if (set === undefined) this.byTopic.set(topic, (set = new Set()));
    set.add(listener);
    return () => void set.delete(listener);
  }

  deliver(topic: string, payload: string): void {
    for (const l of [...(this.byTopic.get(topic) ?? [])]) this.call(topic, () => l.onMessage(payload));
  }

  resync(): void {
    for (const [topic, set] of this.byTopic) for (const l of [...set]) if (l.onResync) this.call(topic, l.onResync);
  }

  clear(): void {
    this.byTopic.clear();
  }

  private call(topic: string, fn: () => void | Promise<void>): void {
    try {
      const result = fn();
      if (result instanceof Promise) result.catch((err: unknown) => this.onError(err, topic));
    } catch (err) {
      this.onError(err, topic);
    }
  }
}

interface ChangeListener {
  onMessage: (payload: string) => void | Promise<void>;
  onResync: (() => void | Promise<void>) | undefined;
}

/**
 * A way to store data other than the default SQLite file, contributed by a plugin
 * (`contributes.dataStore`): `server.store` (or SVC_STORE) holding a URL with one of its schemes
 * selects it. Opened before any plugin's setup, since setups migrate their tables.
 */
export interface StoreStrategy {
  /** URL schemes it opens, without the colon (`postgres`, `postgresql`). */
  schemes: readonly string[];
  /** Connects and checks the store answers; rejects with StoreUnavailableError when it does not. */
  open(url: string, ctx: { log: Logger }): Promise<DataStore>;
}

/** The store could not be reached at start: `svc start` exits 1 with this message (no stack). */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
}

/** Column types of migrations, per dialect: the same DDL text then suits both. */
export interface SqlTypes {
  /** A 64-bit integer: times in ms, counters, ids. SQLite's INTEGER is 64-bit; PostgreSQL's is not. */
  int: string;
  /** An id the database assigns (SQLite AUTOINCREMENT, PostgreSQL identity), with its PRIMARY KEY. */
  autoId: string;
  blob: string;
  real: string;
}

const SQL_TYPES: Record<Dialect, SqlTypes> = {
  sqlite: { int: 'INTEGER', autoId: 'INTEGER PRIMARY KEY AUTOINCREMENT', blob: 'BLOB', real: 'REAL' },
  postgres: { int: 'BIGINT', autoId: 'BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY', blob: 'BYTEA', real: 'DOUBLE PRECISION' },
};

export function sqlTypes(dialect: Dialect): SqlTypes {
  return SQL_TYPES[dialect];
}

/** Whether a store error is a UNIQUE or PRIMARY KEY violation, whichever strategy raised it. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** A store URL for messages and logs: the password, if any, replaced. */
export function redactStoreUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const key of [...u.searchParams.keys()]) if (/pass/i.test(key)) u.searchParams.set(key, '***');
    return u.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
}
