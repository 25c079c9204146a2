import pg from 'pg';
import type { Logger } from 'pino';
import { StoreUnavailableError, redactStoreUrl, type DataStore, type Migration, type Queryable, type RunResult } from '../../../sdk/plugin/index.ts';
import { PgNotifications } from './notifications.ts';
import { positional } from './placeholders.ts';

/** Connections per node; each transaction holds one until it ends. */
const POOL_MAX = 10;
const CONNECT_TIMEOUT_MS = 5_000;

const INT8 = 20;
const BOOL = 16;
const NUMERIC = 1700;

/** Values as the SQLite store gives them (sdk/plugin/store.ts): integers as numbers, truth as 1/0. */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) => {
    if (oid === INT8) return (v: string) => wholeNumber(v) ?? BigInt(v);
    if (oid === BOOL) return (v: string) => (v === 't' ? 1 : 0);
    if (oid === NUMERIC) return (v: string) => wholeNumber(v) ?? v;
    return pg.types.getTypeParser(oid, format as 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

function wholeNumber(text: string): number | undefined {
  const n = Number(text);
  return Number.isSafeInteger(n) && /^-?\d+$/.test(text) ? n : undefined;
}

/** Booleans become 1/0, what SQLite columns hold (INTEGER, not BOOLEAN, in portable DDL). */
function values(params: readonly unknown[] | undefined): unknown[] | undefined {
  if (!params || params.length === 0) return undefined;
  return params.some((p) => typeof p === 'boolean') ? params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p)) : (params as unknown[]);
}

type Send = (text: string, params?: unknown[]) => Promise<pg.QueryResult>;

function queryableOf(send: Send): Queryable {
  const query = (sql: string, params?: readonly unknown[]) => send(positional(sql), values(params));
  return {
    all: async <T>(sql: string, params?: readonly unknown[]) => (await query(sql, params)).rows as T[],
    one: async <T>(sql: string, params?: readonly unknown[]) => (await query(sql, params)).rows[0] as T | undefined,
    run: async (sql: string, params?: readonly unknown[]): Promise<RunResult> => ({ changes: (await query(sql, params)).rowCount ?? 0 }),
  };
}

/**
 * A pool connection held by one transaction (or the migration lock). pg-pool listens for a
 * connection's 'error' events only while it sits idle: one the server ends while it is checked
 * out (pg_terminate_backend, a failover, a proxy's idle timeout) emits 'error' to nobody, which
 * crashes the process. Here the loss is kept instead; statements after it fail with its reason
 * (not pg's "not queryable"), and the connection is discarded on release.
 */
class CheckedOut {
  private lost: Error | undefined;
  private readonly onError = (err: Error) => void (this.lost ??= err);

  constructor(private readonly client: pg.PoolClient) {
    client.on('error', this.onError);
  }

  readonly query: Send = (text, params) => (this.lost === undefined ? this.client.query(text, params) : Promise.reject(this.lost));

  /** Back to the pool, or closed when it failed (`broken`) or was lost. */
  release(broken: Error | undefined): void {
    this.client.release(broken ?? this.lost);
    this.client.off('error', this.onError);
  }
}

/**
 * The PostgreSQL store: a pool of connections; statements outside a transaction take any free
 * one, a transaction keeps one from BEGIN to COMMIT (READ COMMITTED, PostgreSQL's default).
 * Every commit is durable when it returns (synchronous_commit on, set per connection if the
 * server turned it off), so `durable` needs nothing more and sync() has nothing to wait for.
 * PostgreSQL already groups the flushes of commits made at once on different connections (one
 * WAL flush covers every commit record written before it): no grouping here (docs/decisions/cluster.md).
 */
export class PgStore implements DataStore {
  readonly dialect = 'postgres' as const;
  private readonly direct: Queryable;

  private constructor(
    private readonly pool: pg.Pool,
    /** Advisory lock of migrations: per schema, so stores in different schemas of one database do not wait on each other. */
    private readonly lockKey: string,
    /** LISTEN/NOTIFY on the schema's channel (notifications.ts). */
    readonly notifications: PgNotifications,
  ) {
    this.direct = queryableOf((text, params) => pool.query(text, params));
  }

  /** Connects, creates svc_migrations if needed; StoreUnavailableError when the server does not answer. */
  static async open(url: string, ctx: { log: Logger }): Promise<PgStore> {
    const pool = new pg.Pool({
      connectionString: url,
      types,
      max: POOL_MAX,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
      application_name: 'svc',
      // Durable writes need it; stronger settings (remote_apply) stay.
      onConnect: async (client) => {
        await client.query("SELECT set_config('synchronous_commit', 'on', false) WHERE current_setting('synchronous_commit') = 'off'");
      },
    });
    // A connection dropped while idle (server restart): the pool replaces it; without a listener it would crash the process.
    pool.on('error', (err) => ctx.log.warn({ err: err.message }, 'postgres: an idle connection failed'));
    let lockKey: string;
    let schema: string;
    try {
      const row = (await pool.query<{ sync: string; schema: string | null }>("SELECT reset_val AS sync, current_schema() AS schema FROM pg_settings WHERE name = 'synchronous_commit'")).rows[0]!;
      if (row.schema === null) throw new Error('no schema to create tables in (search_path names none that exists)');
      if (row.sync === 'off') ctx.log.warn('postgres: the server runs with synchronous_commit off; svc turns it on for its own connections, since durable writes need it');
      lockKey = `svc.migrate:${row.schema}`;
      schema = row.schema;
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw new StoreUnavailableError(`PostgreSQL at ${redactStoreUrl(url)} did not answer: ${(err as Error).message}`);
    }
    const notifications = new PgNotifications(url, pool, PgNotifications.channelOf(schema), ctx.log);
    const store = new PgStore(pool, lockKey, notifications);
    try {
      await store.locked(async (query) => {
        await query('CREATE TABLE IF NOT EXISTS svc_migrations (owner TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (owner, version))');
      });
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw new StoreUnavailableError(`PostgreSQL at ${redactStoreUrl(url)}: cannot create svc_migrations: ${(err as Error).message}`);
    }
    try {
      await notifications.start();
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw new StoreUnavailableError(`PostgreSQL at ${redactStoreUrl(url)}: cannot listen for changes: ${(err as Error).message}`);
    }
    return store;
  }

  all<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    return this.direct.all<T>(sql, params);
  }
  one<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    return this.direct.one<T>(sql, params);
  }
  run(sql: string, params?: readonly unknown[]): Promise<RunResult> {
    return this.direct.run(sql, params);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const held = new CheckedOut(await this.pool.connect());
    let broken: Error | undefined;
    try {
      await held.query('BEGIN');
      const result = await fn(queryableOf(held.query));
      await held.query('COMMIT');
      return result;
    } catch (err) {
      await held.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw err;
    } finally {
      // A connection that cannot even roll back is closed rather than handed to the next caller.
      held.release(broken);
    }
  }

  /** Every commit was durable when it returned. */
  sync(): Promise<void> {
    return Promise.resolve();
  }

  async migrate(owner: string, migrations: readonly Migration[]): Promise<void> {
    await this.locked(async (query) => {
      const done = new Set((await query('SELECT version FROM svc_migrations WHERE owner = $1', [owner])).rows.map((r: { version: number }) => r.version));
      for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
        if (done.has(m.version)) continue;
        try {
          await query('BEGIN');
          // No parameters: the simple protocol, which runs several statements in one text.
          await query(m.up);
          await query('INSERT INTO svc_migrations (owner, version) VALUES ($1, $2)', [owner, m.version]);
          await query('COMMIT');
        } catch (err) {
          await query('ROLLBACK').catch(() => undefined);
          throw new Error(`migration ${owner} v${m.version} failed: ${(err as Error).message}`);
        }
      }
    });
  }

  /**
   * Runs fn holding the schema's migration lock, a session advisory lock: nodes starting together
   * migrate one after the other (the later ones find the versions applied), and a node that dies
   * holding it frees it with its connection.
   */
  private async locked(fn: (query: Send) => Promise<void>): Promise<void> {
    const held = new CheckedOut(await this.pool.connect());
    let broken: Error | undefined;
    try {
      await held.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [this.lockKey]);
      try {
        await fn(held.query);
      } finally {
        await held.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [this.lockKey]).catch((e: Error) => (broken = e));
      }
    } finally {
      held.release(broken);
    }
  }

  notify(topic: string, payload?: string): Promise<void> {
    return this.notifications.notify(topic, payload);
  }

  listen(topic: string, onMessage: (payload: string) => void | Promise<void>, onResync?: () => void | Promise<void>): () => void {
    return this.notifications.listen(topic, onMessage, onResync);
  }

  async close(): Promise<void> {
    await this.notifications.close();
    // pg refuses a second end(); close() may come twice (a failed start, then shutdown).
    if (!this.pool.ended) await this.pool.end();
  }
}
