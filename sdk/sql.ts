import { callHost } from './internal/runtime.ts';
import { toBase64 } from './internal/bytes.ts';

/**
 * A statement's value: null, boolean, number, string, bytes (a Uint8Array, sent as binary), a Date
 * (sent as ISO 8601 text), or an array or object (sent as its JSON text).
 */
export type SqlParam = null | boolean | number | string | Uint8Array | Date | readonly unknown[] | { readonly [key: string]: unknown };

/** A result column: its name and its database type name ('int8', 'text', 'timestamptz'; 'bigint', 'varchar', 'datetime'). */
export interface SqlField {
  name: string;
  type: string;
}

/** A result row, by column name. */
// biome-ignore lint/suspicious/noExplicitAny: a row holds whatever the statement selects; services name its type when they care
export type SqlRow = Record<string, any>;

/**
 * One statement's result. Values are JSON: 64-bit integers and decimals as strings, other numbers
 * as numbers, dates as 'YYYY-MM-DD', timestamps as ISO 8601 in UTC, binary as base64, JSON
 * columns parsed (PostgreSQL), anything else as text.
 */
export interface SqlResult<R = SqlRow> {
  rows: R[];
  /** Rows returned, or rows changed by INSERT / UPDATE / DELETE. */
  rowCount: number;
  fields: SqlField[];
}

export interface SqlStatement {
  text: string;
  params?: readonly SqlParam[];
}

/**
 * The database refused a statement, or svc stopped it. `code` is the SQLSTATE ('23505' a unique
 * violation, '42P01' no such table...) or one of svc's: 'too_many_rows' and 'too_large' (the
 * connection's max_rows / max_result_bytes), 'timeout' (statement_timeout_ms), 'read_only'.
 * `statement` is the index of the failed statement of a transaction. Not caught, the caller gets 500.
 */
export class SqlError extends Error {
  constructor(
    readonly connection: string,
    readonly code: string,
    message: string,
    readonly statement?: number,
  ) {
    super(message);
    this.name = 'SqlError';
  }
}

/**
 * A SQL connection of config: `sql('crm')`. Statements take placeholders, never values spliced
 * into the text: `$1, $2…` on PostgreSQL, `?` on MySQL and MariaDB. Errors besides SqlError:
 * NotFound (no such connection), Forbidden (not allowed to this service), ServiceUnavailable
 * (the database cannot be reached, or no pooled connection within connect_timeout_ms).
 */
export interface SqlConnection {
  readonly name: string;
  query<R = SqlRow>(text: string, params?: readonly SqlParam[]): Promise<SqlResult<R>>;
  /** The statements in one transaction: all applied, or (on the first failure) none. */
  transaction(statements: readonly SqlStatement[]): Promise<SqlResult[]>;
}

type Failed = { failed: { code: string; message: string; statement?: number } };

function wireParam(value: unknown, at: string): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`${at}: ${value} is not a number a database takes`);
    return value;
  }
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return { $bytes: toBase64(value) };
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return value;
  throw new TypeError(`${at}: ${typeof value} is not a value a statement takes (null, boolean, number, string, Uint8Array, Date, array or object)`);
}

function wireStatement(text: unknown, params: unknown, at: string): { text: string; params: unknown[] } {
  if (typeof text !== 'string' || text === '') throw new TypeError(`${at}: the statement text must be a non-empty string`);
  if (params !== undefined && !Array.isArray(params)) throw new TypeError(`${at}: params must be an array (one value per placeholder)`);
  return { text, params: ((params ?? []) as unknown[]).map((p, i) => wireParam(p, `${at} params[${i}]`)) };
}

class SqlHandle implements SqlConnection {
  constructor(readonly name: string) {}

  async query<R>(text: string, params?: readonly SqlParam[]): Promise<SqlResult<R>> {
    const reply = (await callHost('sql.query', { connection: this.name, ...wireStatement(text, params, `sql('${this.name}').query`) })) as SqlResult<R> | Failed;
    if ('failed' in reply) throw new SqlError(this.name, reply.failed.code, reply.failed.message);
    return reply;
  }

  async transaction(statements: readonly SqlStatement[]): Promise<SqlResult[]> {
    if (!Array.isArray(statements) || statements.length === 0) throw new TypeError(`sql('${this.name}').transaction: give a non-empty array of { text, params }`);
    const wire = statements.map((s, i) => wireStatement(s?.text, s?.params, `sql('${this.name}').transaction statements[${i}]`));
    const reply = (await callHost('sql.transaction', { connection: this.name, statements: wire })) as { results: SqlResult[] } | Failed;
    if ('failed' in reply) throw new SqlError(this.name, reply.failed.code, `statement ${reply.failed.statement ?? '?'}: ${reply.failed.message}`, reply.failed.statement);
    return reply.results;
  }
}

/** The SQL connection `name` of config (`sql_connection:`). Credentials stay on the host. */
export function sql(name: string): SqlConnection {
  if (typeof name !== 'string' || name === '') throw new TypeError('sql: name must be a non-empty string');
  return new SqlHandle(name);
}
