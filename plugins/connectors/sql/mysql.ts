import { readFileSync } from 'node:fs';
import type mysql from 'mysql2';
import { onFirstUse } from '../../../sdk/plugin/index.ts';
import { RowCollector, SqlFailure, type Caps, type DriverParam, type EnginePool, type Occupancy, type Session, type SqlField, type StatementResult } from './engine.ts';
import type { SqlEntry } from './schema.ts';

/** The driver, loaded by the first pool. */
const mysqlDriver = onFirstUse<typeof mysql>(import.meta.url, 'mysql2');

/** The `binary` character set: a BLOB/STRING column of it holds bytes, else text. */
const BINARY_CHARSET = 63;
/** Column type codes (MySQL protocol) as the SQL names services know. */
const TYPE_NAMES: Record<number, string> = {
  0: 'decimal', 1: 'tinyint', 2: 'smallint', 3: 'int', 4: 'float', 5: 'double', 6: 'null', 7: 'timestamp', 8: 'bigint', 9: 'mediumint',
  10: 'date', 11: 'time', 12: 'datetime', 13: 'year', 14: 'date', 15: 'varchar', 16: 'bit', 245: 'json', 246: 'decimal', 247: 'enum', 248: 'set',
  249: 'tinyblob', 250: 'mediumblob', 251: 'longblob', 252: 'blob', 253: 'varchar', 254: 'char', 255: 'geometry',
};
const TEXT_OF_BLOB: Record<number, string> = { 249: 'tinytext', 250: 'mediumtext', 251: 'longtext', 252: 'text' };
const DATETIME_TYPES = new Set([7, 12]);

interface MysqlField {
  name: string;
  columnType: number;
  characterSet: number;
}

function typeName(f: MysqlField): string {
  if (f.characterSet !== BINARY_CHARSET && TEXT_OF_BLOB[f.columnType]) return TEXT_OF_BLOB[f.columnType]!;
  if (f.characterSet === BINARY_CHARSET && (f.columnType === 253 || f.columnType === 254)) return f.columnType === 253 ? 'varbinary' : 'binary';
  return TYPE_NAMES[f.columnType] ?? `type:${f.columnType}`;
}

/** `2024-05-06 07:08:09.123456` (the session's time_zone is UTC) as ISO 8601 in UTC. */
function isoDatetime(text: string): string {
  const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)$/.exec(text);
  return m ? `${m[1]}T${m[2]}Z` : text;
}

/** Errors that are not the statement's: the link, the login, the server's connection limit. */
const UNAVAILABLE_ERRNOS = new Set([1040, 1044, 1045, 1129, 1130, 1203, 2002, 2003, 2006, 2013]);

export function mysqlFailure(err: unknown): SqlFailure {
  if (err instanceof SqlFailure) return err;
  const e = err as { errno?: number; sqlState?: string; code?: string; fatal?: boolean; message?: string };
  const message = e.message ?? String(err);
  if (e.errno === 1969 || e.errno === 3024) return new SqlFailure('timeout', 'the statement ran past statement_timeout_ms and was cancelled by the database');
  if (e.errno === 1792) return new SqlFailure('read_only', message);
  if (e.fatal || e.sqlState === undefined || (e.errno !== undefined && UNAVAILABLE_ERRNOS.has(e.errno))) return new SqlFailure(e.sqlState ?? e.code ?? 'connection', message, true);
  return new SqlFailure(e.sqlState, message);
}

class MysqlSession implements Session {
  private released = false;

  constructor(
    private readonly conn: mysql.PoolConnection,
    private readonly onRelease: () => void,
  ) {}

  run(text: string, params: DriverParam[], caps: Caps): Promise<StatementResult> {
    return new Promise((resolve, reject) => {
      const collector = new RowCollector(caps, resolve, (err) => reject(mysqlFailure(err)), () => this.release(true));
      let fields: MysqlField[] | undefined;
      let dates: string[] = [];
      let affected = 0;
      // execute: a server-side prepared statement, the values sent apart from the text.
      const command = this.conn.execute(text, params) as unknown as NodeJS.EventEmitter;
      command.on('fields', (f: MysqlField[] | undefined) => {
        fields = f;
        dates = (f ?? []).filter((x) => DATETIME_TYPES.has(x.columnType)).map((x) => x.name);
      });
      command.on('result', (row: Record<string, unknown>) => {
        if (fields === undefined) {
          affected = (row as { affectedRows?: number }).affectedRows ?? 0;
          return;
        }
        for (const key in row) {
          const v = row[key];
          if (Buffer.isBuffer(v)) row[key] = v.toString('base64');
        }
        for (const name of dates) if (typeof row[name] === 'string') row[name] = isoDatetime(row[name] as string);
        collector.add(row);
      });
      command.on('end', () => collector.finish(fields ? collector.rows.length : affected, (fields ?? []).map((f) => ({ name: f.name, type: typeName(f) }) satisfies SqlField)));
      command.on('error', (err: Error) => collector.fail(err));
    });
  }

  control(step: 'begin' | 'commit' | 'rollback'): Promise<void> {
    const text = step === 'begin' ? 'START TRANSACTION' : step.toUpperCase();
    return new Promise((resolve, reject) => this.conn.query(text, (err) => (err ? reject(mysqlFailure(err)) : resolve())));
  }

  release(destroy: boolean): void {
    if (this.released) return;
    this.released = true;
    this.onRelease();
    if (destroy) this.conn.destroy();
    else this.conn.release();
  }
}

function sessionSetup(entry: SqlEntry, mariadb: boolean): string[] {
  const statements = ["SET time_zone = '+00:00'"];
  // MariaDB counts seconds (fractions allowed) for every statement; MySQL milliseconds, for SELECTs.
  statements.push(mariadb ? `SET SESSION max_statement_time = ${entry.statement_timeout_ms / 1000}` : `SET SESSION max_execution_time = ${entry.statement_timeout_ms}`);
  if (entry.read_only) statements.push('SET SESSION TRANSACTION READ ONLY');
  return statements;
}

export function mysqlPool(entry: SqlEntry, password: (() => Promise<string | undefined>) | undefined, onIdleError: (err: Error) => void): EnginePool {
  const tls = entry.tls;
  const pool = mysqlDriver().createPool({
    ...(entry.url !== undefined ? { uri: entry.url.replace(/^mariadb:/, 'mysql:') } : { host: entry.host, port: entry.port ?? 3306, database: entry.database, user: entry.username }),
    connectionLimit: entry.pool_size,
    maxIdle: entry.pool_size,
    idleTimeout: entry.idle_timeout_ms,
    connectTimeout: entry.connect_timeout_ms,
    waitForConnections: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    decimalNumbers: false,
    dateStrings: true,
    timezone: 'Z',
    // Prepared statements kept per connection: the server's max_prepared_stmt_count (16382 by default) is for all clients.
    maxPreparedStatements: 256,
    // verifyIdentity: mysql2 checks the certificate's host name only when asked.
    ...(tls?.enabled ? { ssl: { rejectUnauthorized: tls.reject_unauthorized, verifyIdentity: tls.reject_unauthorized, ...(tls.ca_file ? { ca: readFileSync(tls.ca_file, 'utf8') } : {}) } } : {}),
  });
  pool.on('connection', (conn) => {
    // An error on a connection no call holds (server gone, killed) must not crash the process.
    conn.on('error', onIdleError);
    const handshake = (conn as unknown as { _handshakePacket?: { serverVersion?: string } })._handshakePacket;
    // Queued before any call's statement: the connection runs its commands in order.
    for (const statement of sessionSetup(entry, /mariadb/i.test(handshake?.serverVersion ?? ''))) conn.query(statement, (err) => err && onIdleError(err));
  });
  // pool internals: mysql2 exposes no counts.
  const internals = pool as unknown as { _allConnections: { length: number }; _freeConnections: { length: number }; config: { connectionConfig: { password?: string } } };
  let busy = 0;
  let waiting = 0;
  return {
    async acquire() {
      // Read before a connection may be opened: `svc secret set` applies to the next one.
      if (password && internals._freeConnections.length === 0) internals.config.connectionConfig.password = await password();
      waiting++;
      const conn = await new Promise<mysql.PoolConnection>((resolve, reject) => {
        let late = false;
        const timer = setTimeout(() => {
          late = true;
          const full = internals._allConnections.length >= entry.pool_size;
          reject(new SqlFailure(full ? 'pool_timeout' : 'connect_timeout', `no ${full ? 'free ' : ''}connection within connect_timeout_ms (${entry.connect_timeout_ms} ms)`, true));
        }, entry.connect_timeout_ms);
        pool.getConnection((err, c) => {
          clearTimeout(timer);
          if (late) return void c?.release();
          if (err) reject(mysqlFailure(Object.assign(err, { fatal: true })));
          else resolve(c);
        });
      }).finally(() => waiting--);
      busy++;
      return new MysqlSession(conn, () => busy--);
    },
    occupancy(): Occupancy {
      return { size: entry.pool_size, busy, idle: internals._freeConnections.length, waiting };
    },
    close: () => new Promise<void>((resolve) => pool.end(() => resolve())),
  };
}
