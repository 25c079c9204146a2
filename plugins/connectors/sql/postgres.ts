import { readFileSync } from 'node:fs';
import pg from 'pg';
import { RowCollector, SqlFailure, type Caps, type DriverParam, type EnginePool, type Occupancy, type Session, type SqlField, type StatementResult } from './engine.ts';
import type { SqlEntry } from './schema.ts';

const { Pool, Query, types } = pg;

/** Type names by OID, from pg's list of built-in types ('int8', 'timestamptz'...). */
const TYPE_NAMES = new Map<number, string>(Object.entries(types.builtins).map(([name, oid]) => [oid as number, name.toLowerCase()]));

/** `2024-05-06 07:08:09.123456[+00]` (the session's TimeZone is UTC) as ISO 8601 in UTC, microseconds kept. */
function isoTimestamp(text: string): string {
  const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)(?:\+00)?$/.exec(text);
  return m ? `${m[1]}T${m[2]}Z` : text;
}

const TIMESTAMP = 1114;
const TIMESTAMPTZ = 1184;
const BYTEA = 17;
/**
 * Types pg parses to JSON values (booleans, numbers; int8 and numeric stay text; JSON parsed),
 * with their arrays; every other type reaches the service as the database's text (README, value table).
 */
const PARSED_BY_PG = new Set([16, 20, 21, 23, 26, 700, 701, 1700, 114, 3802, 1000, 1005, 1007, 1016, 1021, 1022, 1231, 199, 3807, 1009, 1015]);
const PARSERS = new Map<number, (text: string) => unknown>([
  [TIMESTAMP, isoTimestamp],
  [TIMESTAMPTZ, isoTimestamp],
  [BYTEA, (text) => (types.getTypeParser(BYTEA, 'text')(text) as Buffer).toString('base64')],
]);
const asText = (text: string) => text;
const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    return (PARSERS.get(oid) ?? (PARSED_BY_PG.has(oid) ? types.getTypeParser(oid, format ?? 'text') : asText)) as (value: string) => unknown;
  },
};

/** Errors of the link or the server, not of the statement: the session is lost (SQLSTATE classes 08, 57P, 53300, 28 at login). */
function isUnavailable(code: string | undefined): boolean {
  return code === undefined || code.length !== 5 || code.startsWith('08') || code.startsWith('57P') || code === '53300' || code.startsWith('28');
}

export function pgFailure(err: unknown): SqlFailure {
  if (err instanceof SqlFailure) return err;
  const e = err as { code?: string; message?: string };
  const message = e.message ?? String(err);
  if (e.code === '57014') return new SqlFailure('timeout', `the statement ran past statement_timeout_ms and was cancelled by the database`);
  if (e.code === '25006') return new SqlFailure('read_only', message);
  if (isUnavailable(e.code)) return new SqlFailure(e.code ?? 'connection', message, true);
  return new SqlFailure(e.code!, message);
}

class PgSession implements Session {
  private released = false;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly onRelease: () => void,
  ) {}

  run(text: string, params: DriverParam[], caps: Caps): Promise<StatementResult> {
    return new Promise((resolve, reject) => {
      const collector = new RowCollector(caps, resolve, (err) => reject(pgFailure(err)), () => this.release(true));
      // Extended protocol always: text and values travel apart, and the text is one statement.
      const query = new Query({ text, values: params, queryMode: 'extended' } as pg.QueryConfig);
      query.on('row', (row: Record<string, unknown>) => collector.add(row));
      query.on('end', (result: pg.QueryResult) => collector.finish(result.rowCount ?? collector.rows.length, fieldsOf(result.fields)));
      query.on('error', (err: Error) => collector.fail(err));
      this.client.query(query);
    });
  }

  async control(step: 'begin' | 'commit' | 'rollback'): Promise<void> {
    try {
      await this.client.query(step.toUpperCase());
    } catch (err) {
      throw pgFailure(err);
    }
  }

  release(destroy: boolean): void {
    if (this.released) return;
    this.released = true;
    this.onRelease();
    this.client.release(destroy ? new Error('closed by the sql plugin') : undefined);
  }
}

function fieldsOf(fields: pg.FieldDef[]): SqlField[] {
  return fields.map((f) => ({ name: f.name, type: TYPE_NAMES.get(f.dataTypeID) ?? `oid:${f.dataTypeID}` }));
}

export function postgresPool(entry: SqlEntry, password: (() => Promise<string | undefined>) | undefined, onIdleError: (err: Error) => void): EnginePool {
  const sessionOptions = ['-c TimeZone=UTC', `-c statement_timeout=${entry.statement_timeout_ms}`];
  if (entry.read_only) sessionOptions.push('-c default_transaction_read_only=on');
  const tls = entry.tls;
  const config: pg.PoolConfig = {
    ...(entry.url !== undefined ? { connectionString: entry.url } : { host: entry.host, port: entry.port ?? 5432, database: entry.database, user: entry.username }),
    max: entry.pool_size,
    connectionTimeoutMillis: entry.connect_timeout_ms,
    idleTimeoutMillis: entry.idle_timeout_ms,
    options: sessionOptions.join(' '),
    application_name: 'svc',
    keepAlive: true,
    types: typeParsers,
    ssl: tls?.enabled ? { rejectUnauthorized: tls.reject_unauthorized, ...(tls.ca_file ? { ca: readFileSync(tls.ca_file, 'utf8') } : {}), ...(tls.server_name ? { servername: tls.server_name } : {}) } : false,
  };
  // Read at each connect: `svc secret set` applies to the next connection opened.
  if (password) config.password = async () => (await password()) ?? '';
  const pool = new Pool(config);
  // A pooled connection lost while idle (server restart, pg_terminate_backend) must not crash the process.
  pool.on('error', onIdleError);
  let busy = 0;
  // A lent connection lost between two statements emits 'error' on itself: one listener per connection.
  const watched = new WeakSet<pg.PoolClient>();
  return {
    async acquire() {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        // Every connection was open and lent: the wait for a free one ran out, the database is fine.
        if (pool.totalCount >= entry.pool_size) throw new SqlFailure('pool_timeout', `no free connection within connect_timeout_ms (${entry.connect_timeout_ms} ms)`, true);
        const failure = pgFailure(err);
        throw failure.unavailable ? failure : new SqlFailure(failure.code, failure.message, true);
      }
      if (!watched.has(client)) {
        watched.add(client);
        client.on('error', onIdleError);
      }
      busy++;
      return new PgSession(client, () => busy--);
    },
    occupancy(): Occupancy {
      return { size: entry.pool_size, busy, idle: pool.idleCount, waiting: pool.waitingCount };
    },
    close: () => pool.end(),
  };
}
