import { ConnectionMeter, SvcError, type ConnectionReport, type KernelApi } from '../../../sdk/plugin/index.ts';
import { resolvePassword } from '../shared/credentials.ts';
import { settleWithin, waitLimit } from '../shared/wait.ts';
import { SqlFailure, type DriverParam, type EnginePool, type Session, type StatementResult } from './engine.ts';
import { mysqlPool } from './mysql.ts';
import { postgresPool } from './postgres.ts';
import type { SqlEntry } from './schema.ts';

const monotonic = { now: () => performance.now() };

/** A statement as a service sent it, its values already as the driver takes them. */
export interface Statement {
  text: string;
  params: DriverParam[];
}

/** What a failed statement becomes for the service: its SqlError (the host call's `failed` answer). */
export interface Failed {
  failed: { code: string; message: string; statement?: number };
}

/** Reasons shown in /ready: short, with no host, user or password. */
function safeReason(failure: SqlFailure): string {
  const code = failure.code;
  if (code.startsWith('28') || code === '1045' || /access denied|password/i.test(failure.message)) return 'login refused';
  if (code === 'pool_timeout') return 'no free connection within connect_timeout_ms';
  if (/ECONNREFUSED/.test(failure.message) || code === 'ECONNREFUSED') return 'connection refused';
  if (/timeout|ETIMEDOUT/i.test(failure.message)) return 'connect timed out';
  return 'connection failed';
}

/**
 * One `sql_connection` entry: its pool (opened at first use, or at start with ready_check), its
 * meter and its state for /ready. Calls borrow a session, run, and give it back, or close it when
 * it cannot be trusted (a cap hit mid-result, a timeout, a lost link).
 */
export class SqlConnection {
  readonly meter = new ConnectionMeter(monotonic);
  private pool: EnginePool | undefined;
  private state: ConnectionReport['state'] = 'idle';
  private reason: string | undefined;
  private wasDown = false;
  private probing: Promise<void> | undefined;

  constructor(
    readonly entry: SqlEntry,
    private readonly kernel: KernelApi,
  ) {}

  private open(): EnginePool {
    if (this.pool) return this.pool;
    const entry = this.entry;
    const password = entry.password !== undefined || entry.password_secret !== undefined ? () => resolvePassword(this.kernel, entry) : undefined;
    const onIdleError = (err: Error) => this.kernel.log.warn({ plugin: 'sql', connection: entry.name, code: (err as { code?: string }).code }, 'an idle SQL connection failed; the pool drops it');
    this.pool = entry.engine === 'postgresql' ? postgresPool(entry, password, onIdleError) : mysqlPool(entry, password, onIdleError);
    this.state = 'connecting';
    return this.pool;
  }

  /** A session for one `operation` started at `at`; when none can be had, the operation is counted as an error. */
  private async borrow(operation: string, at: number, timeLeftMs: number): Promise<Session> {
    const wait = waitLimit(this.entry.connect_timeout_ms, 'connect_timeout_ms', timeLeftMs);
    try {
      const acquiring = this.open().acquire();
      // The driver's own wait ends at connect_timeout_ms; one cut short by the caller's time limit ends here, a session that comes later going back to the pool.
      const session = wait.ms < this.entry.connect_timeout_ms ? await settleWithin(acquiring, wait.ms, (late) => late.release(false)) : await acquiring;
      if (!session) {
        this.meter.done(operation, 'error', at);
        throw new SvcError('SERVICE_UNAVAILABLE', `SQL connection '${this.entry.name}' is unavailable: no connection ${wait.within}`);
      }
      if (this.wasDown) this.meter.reconnects++;
      this.wasDown = false;
      this.state = 'up';
      this.reason = undefined;
      return session;
    } catch (err) {
      if (err instanceof SvcError) throw err;
      this.meter.done(operation, 'error', at);
      const failure = err instanceof SqlFailure ? err : new SqlFailure('connection', (err as Error).message, true);
      // A full pool is busy, not down: /ready keeps its state.
      if (failure.code !== 'pool_timeout') this.down(failure);
      throw new SvcError('SERVICE_UNAVAILABLE', `SQL connection '${this.entry.name}' is unavailable: ${safeReason(failure)}`);
    }
  }

  private down(failure: SqlFailure): void {
    this.state = 'down';
    this.wasDown = true;
    this.reason = safeReason(failure);
    this.kernel.log.warn({ plugin: 'sql', connection: this.entry.name, code: failure.code, reason: failure.message }, 'SQL connection failed');
  }

  private caps() {
    return { maxRows: this.entry.max_rows, maxBytes: this.entry.max_result_bytes, timeoutMs: this.entry.statement_timeout_ms };
  }

  /** A statement's failure as the service's answer; a lost link is ServiceUnavailable instead. */
  private answer(err: unknown, statement?: number): Failed {
    if (!(err instanceof SqlFailure)) throw err;
    if (err.unavailable) {
      this.down(err);
      throw new SvcError('SERVICE_UNAVAILABLE', `SQL connection '${this.entry.name}' was lost during the statement`);
    }
    return { failed: { code: err.code, message: err.message, ...(statement === undefined ? {} : { statement }) } };
  }

  /** `timeLeftMs`: what the calling service's time limit leaves (HostCallContext.timeLeftMs); waiting for a connection ends by then too. */
  async query(statement: Statement, timeLeftMs = Infinity): Promise<StatementResult | Failed> {
    const at = this.meter.start();
    const session = await this.borrow('query', at, timeLeftMs);
    try {
      const result = await session.run(statement.text, statement.params, this.caps());
      session.release(false);
      this.meter.done('query', 'ok', at);
      return result;
    } catch (err) {
      this.meter.done('query', 'error', at);
      session.release(err instanceof SqlFailure ? err.broken : true);
      return this.answer(err);
    }
  }

  /** BEGIN, each statement, COMMIT on one session; the first failure rolls back and names its index. */
  async transaction(statements: Statement[], timeLeftMs = Infinity): Promise<{ results: StatementResult[] } | Failed> {
    const at = this.meter.start();
    const session = await this.borrow('transaction', at, timeLeftMs);
    const results: StatementResult[] = [];
    let index: number | undefined;
    try {
      await session.control('begin');
      for (index = 0; index < statements.length; index++) results.push(await session.run(statements[index]!.text, statements[index]!.params, this.caps()));
      index = undefined;
      await session.control('commit');
      session.release(false);
      this.meter.done('transaction', 'ok', at);
      return { results };
    } catch (err) {
      this.meter.done('transaction', 'error', at);
      const broken = !(err instanceof SqlFailure) || err.broken;
      // A closed session rolls back in the database; an open one is rolled back before it is reused.
      if (!broken) await session.control('rollback').then(() => session.release(false), () => session.release(true));
      else session.release(true);
      return this.answer(err, index);
    }
  }

  /** Opens the pool and checks the database answers (ready_check connections, at start and while down). */
  probe(): Promise<void> {
    this.probing ??= this.query({ text: 'SELECT 1', params: [] })
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        this.probing = undefined;
      });
    return this.probing;
  }

  report(): ConnectionReport {
    // A ready_check connection that is down is tried again when /ready asks (one probe at a time).
    if (this.entry.ready_check && this.state === 'down') void this.probe();
    return {
      kind: 'sql',
      name: this.entry.name,
      role: 'connection',
      state: this.state,
      ...(this.reason === undefined ? {} : { reason: this.reason }),
      readyCheck: this.entry.ready_check,
      meter: this.meter,
      pool: this.pool ? this.pool.occupancy() : { size: this.entry.pool_size, busy: 0, idle: 0, waiting: 0 },
    };
  }

  /** Waits (bounded) for calls in flight to give their sessions back, then closes the pool. */
  async close(waitMs = 30_000): Promise<void> {
    const pool = this.pool;
    if (!pool) return;
    const until = performance.now() + waitMs;
    while (pool.occupancy().busy > 0 && performance.now() < until) await new Promise((r) => setTimeout(r, 50));
    await pool.close();
  }
}
