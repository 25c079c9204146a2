/**
 * What the SQL plugin needs of a database driver: a pool of sessions, each running one statement
 * at a time with its rows counted as they arrive. postgres.ts (pg) and mysql.ts (mysql2) implement it.
 */

/** A value as it goes to the driver: JSON scalars, text (arrays and objects as JSON) or bytes. */
export type DriverParam = null | boolean | number | string | Buffer;

export interface Caps {
  maxRows: number;
  maxBytes: number;
  /** The statement timeout; the host gives the database HOST_GRACE_MS more before dropping the connection. */
  timeoutMs: number;
}

export interface SqlField {
  name: string;
  type: string;
}

export interface StatementResult {
  rows: Array<Record<string, unknown>>;
  rowCount: number;
  fields: SqlField[];
}

export interface Occupancy {
  size: number;
  busy: number;
  idle: number;
  waiting: number;
}

/** One pooled connection, lent to one call. */
export interface Session {
  run(text: string, params: DriverParam[], caps: Caps): Promise<StatementResult>;
  /** BEGIN / COMMIT / ROLLBACK, as the engine spells them. */
  control(step: 'begin' | 'commit' | 'rollback'): Promise<void>;
  /** Back to the pool, or closed when it cannot be trusted any more (a cap hit mid-result, a lost link). */
  release(destroy: boolean): void;
}

export interface EnginePool {
  acquire(): Promise<Session>;
  occupancy(): Occupancy;
  close(): Promise<void>;
}

/** How long past statement_timeout_ms the host waits for the database's own cancel before it drops the connection. */
export const HOST_GRACE_MS = 1000;

/**
 * A failed statement as the service learns it: `code` is the SQLSTATE, or one of the plugin's own
 * (too_many_rows, too_large, timeout, read_only). `unavailable`: the database could not be reached
 * or the link broke (the service gets ServiceUnavailable). `broken`: the session must be closed.
 */
export class SqlFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly unavailable = false,
    readonly broken = unavailable,
  ) {
    super(message);
    this.name = 'SqlFailure';
  }
}

/** About the size of a row as JSON text: strings by length, numbers and booleans 8, nested values by their JSON. */
function sizeOf(row: Record<string, unknown>): number {
  let n = 0;
  for (const key in row) {
    const v = row[key];
    if (typeof v === 'string') n += v.length + 2;
    else if (v === null || typeof v !== 'object') n += 8;
    else n += JSON.stringify(v).length;
  }
  return n;
}

/**
 * Collects one statement's rows as the driver hands them over, with the caps checked at each row:
 * past max_rows, max_result_bytes or the host's deadline it stops (`abort` closes the connection,
 * which stops the database sending) and rejects, so a huge result is never held in memory.
 */
export class RowCollector {
  readonly rows: Array<Record<string, unknown>> = [];
  private bytes = 0;
  private settled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly caps: Caps,
    private readonly resolve: (result: StatementResult) => void,
    private readonly reject: (err: unknown) => void,
    private readonly abort: () => void,
  ) {
    this.timer = setTimeout(() => this.stop(new SqlFailure('timeout', `the statement ran past statement_timeout_ms (${caps.timeoutMs} ms); its connection was closed`, false, true)), caps.timeoutMs + HOST_GRACE_MS);
  }

  get done(): boolean {
    return this.settled;
  }

  add(row: Record<string, unknown>): void {
    if (this.settled) return;
    if (this.rows.length >= this.caps.maxRows) return this.stop(new SqlFailure('too_many_rows', `the result has more than max_rows (${this.caps.maxRows}) rows`, false, true));
    this.bytes += sizeOf(row);
    if (this.bytes > this.caps.maxBytes) return this.stop(new SqlFailure('too_large', `the result is larger than max_result_bytes (${this.caps.maxBytes})`, false, true));
    this.rows.push(row);
  }

  finish(rowCount: number, fields: SqlField[]): void {
    if (this.settled) return;
    this.settle();
    this.resolve({ rows: this.rows, rowCount, fields });
  }

  fail(err: unknown): void {
    if (this.settled) return;
    this.settle();
    this.reject(err);
  }

  private stop(failure: SqlFailure): void {
    this.settle();
    this.rows.length = 0;
    this.abort();
    this.reject(failure);
  }

  private settle(): void {
    this.settled = true;
    clearTimeout(this.timer);
  }
}
