import { sqlTypes, type DataStore, type Dialect, type Migration, type Queryable } from '../../sdk/plugin/index.ts';

/**
 * The scheduler's two tables. `scheduler_job`: one row per job ever configured, holding the
 * latest tick taken (`last_tick`), which is how a tick is claimed once across nodes: a node takes
 * tick T by moving last_tick forward to T under the row's lock, and a node that finds it at T or
 * past has lost it. `scheduler_run`: one row per tick taken (run, skipped, missed, waiting), the
 * job's history. Times are milliseconds since the epoch.
 */
export function schedulerMigrations(dialect: Dialect): Migration[] {
  const t = sqlTypes(dialect);
  return [
    {
      version: 1,
      up: `
        CREATE TABLE scheduler_job (
          name TEXT PRIMARY KEY,
          last_tick ${t.int} NOT NULL,
          paused INTEGER NOT NULL,
          fingerprint TEXT NOT NULL,
          updated_at ${t.int} NOT NULL
        );
        CREATE TABLE scheduler_run (
          job TEXT NOT NULL,
          tick ${t.int} NOT NULL,
          cause TEXT NOT NULL,
          state TEXT NOT NULL,
          cid TEXT,
          event_id ${t.int},
          node TEXT,
          due_at ${t.int} NOT NULL,
          claimed_at ${t.int} NOT NULL,
          started_at ${t.int},
          ended_at ${t.int},
          attempts INTEGER NOT NULL,
          missed INTEGER NOT NULL,
          error_kind TEXT,
          error TEXT,
          PRIMARY KEY (job, tick)
        );
        CREATE INDEX scheduler_run_open ON scheduler_run (job, state);
        CREATE INDEX scheduler_run_event ON scheduler_run (event_id)
      `,
    },
  ];
}

/**
 * A run's state. `waiting`: taken while an earlier run was still going (overlap: queue), runs
 * when that one ends; `queued`: stored in the job's durable queue, waiting for its attempt or in
 * it (no write marks an attempt's start: the end records it); `retrying` (an attempt failed,
 * another follows); `succeeded`, `failed` (dead-lettered); `skipped` (overlap:
 * skip); `missed` (ticks that fell while no node was up, one row for all of them).
 */
export type RunState = 'waiting' | 'queued' | 'retrying' | 'succeeded' | 'failed' | 'skipped' | 'missed';
export const OPEN_STATES: readonly RunState[] = ['waiting', 'queued', 'retrying'];
export type RunCause = 'schedule' | 'manual' | 'catch_up';

export interface RunRow {
  job: string;
  tick: number;
  cause: RunCause;
  state: RunState;
  cid: string | null;
  event_id: number | null;
  node: string | null;
  due_at: number;
  claimed_at: number;
  started_at: number | null;
  ended_at: number | null;
  attempts: number;
  missed: number;
  error_kind: string | null;
  error: string | null;
}

export interface JobRow {
  name: string;
  last_tick: number;
  paused: number;
  fingerprint: string;
  updated_at: number;
}

const MAX_ERROR_TEXT = 2_000;
const OPEN_SQL = `state IN (${OPEN_STATES.map((s) => `'${s}'`).join(', ')})`;

/** Numbers come back as strings from some drivers (PostgreSQL BIGINT): read them as numbers. */
function runOf(r: Record<string, unknown>): RunRow {
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    job: String(r.job),
    tick: Number(r.tick),
    cause: r.cause as RunCause,
    state: r.state as RunState,
    cid: (r.cid as string | null) ?? null,
    event_id: n(r.event_id),
    node: (r.node as string | null) ?? null,
    due_at: Number(r.due_at),
    claimed_at: Number(r.claimed_at),
    started_at: n(r.started_at),
    ended_at: n(r.ended_at),
    attempts: Number(r.attempts),
    missed: Number(r.missed),
    error_kind: (r.error_kind as string | null) ?? null,
    error: (r.error as string | null) ?? null,
  };
}

export class SchedulerTables {
  private readonly lock: string;

  private constructor(readonly store: DataStore) {
    // PostgreSQL: the claim reads last_tick under the row's lock, so two nodes never both take a tick
    // and missed ticks are counted from what was really taken. SQLite serialises writers anyway.
    this.lock = store.dialect === 'postgres' ? ' FOR UPDATE' : '';
  }

  static async open(store: DataStore): Promise<SchedulerTables> {
    await store.migrate('scheduler', schedulerMigrations(store.dialect));
    return new SchedulerTables(store);
  }

  /**
   * A configured job's row: created at first sight with `firstTick` as its last tick (ticks
   * before a job existed are not missed ticks); a changed schedule (fingerprint) moves last_tick
   * up to `now`, so the new schedule never catches up ticks from before the change.
   */
  async register(name: string, fingerprint: string, firstTick: number, now: number): Promise<void> {
    await this.store.transaction(async (tx) => {
      const row = await tx.one<{ fingerprint: string; last_tick: number }>('SELECT fingerprint, last_tick FROM scheduler_job WHERE name = ?' + this.lock, [name]);
      if (!row) {
        await tx.run('INSERT INTO scheduler_job (name, last_tick, paused, fingerprint, updated_at) VALUES (?, ?, 0, ?, ?) ON CONFLICT (name) DO NOTHING', [name, firstTick, fingerprint, now]);
        return;
      }
      if (row.fingerprint !== fingerprint) {
        await tx.run('UPDATE scheduler_job SET fingerprint = ?, last_tick = ?, updated_at = ? WHERE name = ?', [fingerprint, Math.max(Number(row.last_tick), now), now, name]);
      }
    });
  }

  /** The job's row read under its lock, inside a claim. */
  lockJob(tx: Queryable, name: string): Promise<JobRow | undefined> {
    return tx.one<JobRow>('SELECT name, last_tick, paused, fingerprint, updated_at FROM scheduler_job WHERE name = ?' + this.lock, [name]).then((r) => r && { ...r, last_tick: Number(r.last_tick), paused: Number(r.paused) });
  }

  async jobs(): Promise<JobRow[]> {
    const rows = await this.store.all<JobRow>('SELECT name, last_tick, paused, fingerprint, updated_at FROM scheduler_job ORDER BY name');
    return rows.map((r) => ({ ...r, last_tick: Number(r.last_tick), paused: Number(r.paused), updated_at: Number(r.updated_at) }));
  }

  /** Last ticks of the named jobs, read without a lock. */
  async lastTicks(names: readonly string[]): Promise<Map<string, number>> {
    const rows = await this.store.all<{ name: string; last_tick: number }>(`SELECT name, last_tick FROM scheduler_job WHERE name IN (${names.map(() => '?').join(', ')})`, names);
    return new Map(rows.map((r) => [r.name, Number(r.last_tick)]));
  }

  advance(tx: Queryable, name: string, tick: number): Promise<unknown> {
    return tx.run('UPDATE scheduler_job SET last_tick = ? WHERE name = ? AND last_tick < ?', [tick, name, tick]);
  }

  async hasOpenRun(tx: Queryable, job: string): Promise<boolean> {
    return (await tx.one(`SELECT 1 AS x FROM scheduler_run WHERE job = ? AND ${OPEN_SQL} LIMIT 1`, [job])) !== undefined;
  }

  /** The oldest run of the job waiting for the one before it, if any. */
  async oldestWaiting(tx: Queryable, job: string): Promise<RunRow | undefined> {
    const r = await tx.one<Record<string, unknown>>("SELECT * FROM scheduler_run WHERE job = ? AND state = 'waiting' ORDER BY tick LIMIT 1", [job]);
    return r && runOf(r);
  }

  async insertRun(tx: Queryable, run: RunRow): Promise<void> {
    await tx.run(
      'INSERT INTO scheduler_run (job, tick, cause, state, cid, event_id, node, due_at, claimed_at, started_at, ended_at, attempts, missed, error_kind, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [run.job, run.tick, run.cause, run.state, run.cid, run.event_id, run.node, run.due_at, run.claimed_at, run.started_at, run.ended_at, run.attempts, run.missed, run.error_kind, run.error],
    );
  }

  /** A waiting run handed to the queue. */
  async queued(tx: Queryable, job: string, tick: number, eventId: number, cid: string, node: string): Promise<void> {
    await tx.run("UPDATE scheduler_run SET state = 'queued', event_id = ?, cid = ?, node = ? WHERE job = ? AND tick = ?", [eventId, cid, node, job, tick]);
  }

  // A run is found by its event's id and CID together: SQLite reuses the ids of deleted events.
  /** The run of a queued event, inside the transaction that settles the event's attempt. */
  async runOfEvent(tx: Queryable, eventId: number, cid: string): Promise<RunRow | undefined> {
    const r = await tx.one<Record<string, unknown>>('SELECT * FROM scheduler_run WHERE event_id = ? AND cid = ?', [eventId, cid]);
    return r && runOf(r);
  }

  async settle(tx: Queryable, run: RunRow, change: { state: RunState; attempts: number; startedAt: number; endedAt: number | null; errorKind: string | null; error: string | null }): Promise<void> {
    const error = change.error && change.error.length > MAX_ERROR_TEXT ? change.error.slice(0, MAX_ERROR_TEXT) + '…' : change.error;
    await tx.run('UPDATE scheduler_run SET state = ?, attempts = ?, started_at = COALESCE(started_at, ?), ended_at = ?, error_kind = ?, error = ? WHERE job = ? AND tick = ?', [
      change.state,
      change.attempts,
      change.startedAt,
      change.endedAt,
      change.errorKind,
      error,
      run.job,
      run.tick,
    ]);
  }

  async setPaused(name: string, paused: boolean, now: number): Promise<boolean> {
    // Resuming never catches up the ticks that fell while paused: they were not missed, they were declined.
    const r = paused
      ? await this.store.run('UPDATE scheduler_job SET paused = 1, updated_at = ? WHERE name = ?', [now, name])
      : await this.store.run('UPDATE scheduler_job SET paused = 0, last_tick = CASE WHEN last_tick < ? THEN ? ELSE last_tick END, updated_at = ? WHERE name = ?', [now, now, now, name]);
    return r.changes > 0;
  }

  /** A job's history, newest first. */
  async history(job: string, limit: number, beforeTick?: number): Promise<RunRow[]> {
    const rows = await this.store.all<Record<string, unknown>>(
      `SELECT * FROM scheduler_run WHERE job = ?${beforeTick === undefined ? '' : ' AND tick < ?'} ORDER BY tick DESC LIMIT ?`,
      beforeTick === undefined ? [job, limit] : [job, beforeTick, limit],
    );
    return rows.map(runOf);
  }

  /** The newest run of each job that has one. */
  async lastRuns(): Promise<Map<string, RunRow>> {
    const rows = await this.store.all<Record<string, unknown>>(
      "SELECT r.* FROM scheduler_run r JOIN (SELECT job, MAX(tick) AS tick FROM scheduler_run WHERE state NOT IN ('skipped', 'waiting') GROUP BY job) m ON r.job = m.job AND r.tick = m.tick",
    );
    return new Map(rows.map((r) => [String(r.job), runOf(r)]));
  }

  /** Keeps the newest `keep` finished runs of the job; open runs always stay. */
  async prune(job: string, keep: number): Promise<number> {
    const edge = await this.store.one<{ tick: number }>(`SELECT tick FROM scheduler_run WHERE job = ? AND NOT ${OPEN_SQL} ORDER BY tick DESC LIMIT 1 OFFSET ?`, [job, keep]);
    if (!edge) return 0;
    return (await this.store.run(`DELETE FROM scheduler_run WHERE job = ? AND tick <= ? AND NOT ${OPEN_SQL}`, [job, Number(edge.tick)])).changes;
  }
}
