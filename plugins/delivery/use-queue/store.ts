import { sqlTypes, type DataStore, type Dialect, type InvokeRequest, type Migration } from '../../../sdk/plugin/index.ts';

/**
 * The events table. One row per event accepted and not yet processed: 'pending' (waiting for
 * its first attempt or a retry), 'running' (an attempt in flight), 'dead' (the dead-letter
 * queue). A processed event's row is deleted. Times are milliseconds since the epoch.
 */
export function queueMigrations(dialect: Dialect): Migration[] {
  const t = sqlTypes(dialect);
  return [
    {
      version: 1,
      up: `
        CREATE TABLE use_queue_event (
          id ${t.int} PRIMARY KEY,
          channel TEXT,
          service TEXT NOT NULL,
          state TEXT NOT NULL,
          cid TEXT NOT NULL,
          attempts INTEGER NOT NULL,
          first_received_at ${t.int} NOT NULL,
          next_attempt_at ${t.int} NOT NULL,
          running_cid TEXT,
          request TEXT NOT NULL,
          errors TEXT NOT NULL
        );
        CREATE INDEX use_queue_event_state ON use_queue_event (state, id)
      `,
    },
  ];
}

export type EventState = 'pending' | 'running' | 'dead';

/** One failed attempt, kept with the event (the dead-letter queue shows them all). */
export interface AttemptError {
  attempt: number;
  /** The attempt's own CID. */
  cid: string;
  /** ISO 8601. */
  at: string;
  /** What failed: a service error class (BadRequest, Error...), an error code (SERVICE_TIMEOUT...), or Interrupted. */
  kind: string;
  message: string;
}

/** Errors kept per event: replays add more; the oldest go first past this. */
export const MAX_KEPT_ERRORS = 100;
const MAX_ERROR_TEXT = 2_000;

export interface EventRow {
  id: number;
  channel: string | null;
  service: string;
  state: EventState;
  cid: string;
  attempts: number;
  first_received_at: number;
  next_attempt_at: number;
  running_cid: string | null;
  request: string;
  errors: string;
}

/** An event as operators see it (control ops, CLI). */
export interface EventView {
  id: number;
  channel: string | null;
  service: string;
  state: EventState;
  cid: string;
  attempts: number;
  firstReceivedAt: string;
  nextAttemptAt: string | null;
  errors: AttemptError[];
}

export function viewOf(row: Omit<EventRow, 'request' | 'running_cid'>): EventView {
  return {
    id: row.id,
    channel: row.channel,
    service: row.service,
    state: row.state,
    cid: row.cid,
    attempts: row.attempts,
    firstReceivedAt: new Date(row.first_received_at).toISOString(),
    nextAttemptAt: row.state === 'pending' ? new Date(row.next_attempt_at).toISOString() : null,
    errors: JSON.parse(row.errors) as AttemptError[],
  };
}

export function withError(errorsJson: string, error: AttemptError): string {
  const errors = JSON.parse(errorsJson) as AttemptError[];
  errors.push({ ...error, message: error.message.length > MAX_ERROR_TEXT ? error.message.slice(0, MAX_ERROR_TEXT) + '…' : error.message });
  return JSON.stringify(errors.length > MAX_KEPT_ERRORS ? errors.slice(-MAX_KEPT_ERRORS) : errors);
}

/** A stored request as operators read it: the service's input whole, not as fields over the payload. */
function readableRequest(req: InvokeRequest): InvokeRequest {
  const { inputOverPayload, ...rest } = req;
  if (!inputOverPayload) return req;
  return { ...rest, input: { ...(rest.payload as Record<string, unknown>), ...inputOverPayload } };
}

/** What a new event holds: what the worker needs to invoke its service. */
export interface NewEvent {
  id: number;
  channel: string | null;
  request: InvokeRequest;
  receivedAt: number;
}

const COLUMNS = 'id, channel, service, state, cid, attempts, first_received_at, next_attempt_at, errors';

/** The statements on the events table; the scheduler keeps memory and table in step. */
export class QueueTable {
  constructor(private readonly store: DataStore) {}

  static async open(store: DataStore): Promise<QueueTable> {
    await store.migrate('use-queue', queueMigrations(store.dialect));
    return new QueueTable(store);
  }

  /** Resolves once the event is on stable storage (grouped commit). */
  async insert(e: NewEvent): Promise<void> {
    const { cid, delivery: _, ...request } = e.request;
    await this.store.transaction(
      (tx) =>
        tx.run(
          'INSERT INTO use_queue_event (id, channel, service, state, cid, attempts, first_received_at, next_attempt_at, request, errors) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?)',
          [e.id, e.channel, request.service, 'pending', cid, e.receivedAt, e.receivedAt, JSON.stringify(request), '[]'],
        ),
      { durable: true },
    );
  }

  /** Events in the dead-letter queue, by queue (channel; null: background work). */
  async deadCounts(): Promise<Array<{ channel: string | null; count: number }>> {
    return this.store.all<{ channel: string | null; count: number }>("SELECT channel, COUNT(*) AS count FROM use_queue_event WHERE state = 'dead' GROUP BY channel");
  }

  async maxId(): Promise<number> {
    const row = await this.store.one<{ m: number | null }>('SELECT MAX(id) AS m FROM use_queue_event');
    return row?.m ?? 0;
  }

  /** A crash mid-attempt left rows 'running': they go back to 'pending', the attempt recorded as interrupted. */
  async recoverInterrupted(now: number): Promise<number> {
    const rows = await this.store.all<Pick<EventRow, 'id' | 'attempts' | 'running_cid' | 'errors'>>("SELECT id, attempts, running_cid, errors FROM use_queue_event WHERE state = 'running'");
    if (!rows.length) return 0;
    await this.store.transaction(async (tx) => {
      for (const r of rows) {
        const errors = withError(r.errors, { attempt: r.attempts, cid: r.running_cid ?? '', at: new Date(now).toISOString(), kind: 'Interrupted', message: 'the server stopped during this attempt' });
        await tx.run("UPDATE use_queue_event SET state = 'pending', running_cid = NULL, next_attempt_at = ?, errors = ? WHERE id = ?", [now, errors, r.id]);
      }
    });
    return rows.length;
  }

  /** Every pending event, in arrival order: what the scheduler holds in memory. */
  pendingIndex(): Promise<Array<Pick<EventRow, 'id' | 'channel' | 'attempts' | 'next_attempt_at'>>> {
    return this.store.all("SELECT id, channel, attempts, next_attempt_at FROM use_queue_event WHERE state = 'pending' ORDER BY id");
  }

  /**
   * Marks an attempt started and returns what it needs, or undefined when the event is no longer
   * pending (deleted or replayed meanwhile by an operator): the update decides, not an earlier read.
   */
  async start(id: number, attemptCid: string): Promise<Pick<EventRow, 'cid' | 'attempts' | 'first_received_at' | 'request' | 'errors'> | undefined> {
    const r = await this.store.run("UPDATE use_queue_event SET state = 'running', attempts = attempts + 1, running_cid = ? WHERE id = ? AND state = 'pending'", [attemptCid, id]);
    if (!r.changes) return undefined;
    return this.store.one('SELECT cid, attempts, first_received_at, request, errors FROM use_queue_event WHERE id = ?', [id]);
  }

  async succeeded(id: number): Promise<void> {
    await this.store.run('DELETE FROM use_queue_event WHERE id = ?', [id]);
  }

  async retryLater(id: number, errors: string, at: number): Promise<void> {
    await this.store.run("UPDATE use_queue_event SET state = 'pending', running_cid = NULL, next_attempt_at = ?, errors = ? WHERE id = ?", [at, errors, id]);
  }

  async deadLetter(id: number, errors: string): Promise<void> {
    await this.store.run("UPDATE use_queue_event SET state = 'dead', running_cid = NULL, errors = ? WHERE id = ?", [errors, id]);
  }

  /** Events for operators, newest last; channel null selects background events, undefined every queue. */
  async list(filter: { channel?: string | null; state?: EventState; limit: number; afterId?: number }): Promise<EventView[]> {
    const where: string[] = ['id > ?'];
    const params: unknown[] = [filter.afterId ?? 0];
    if (filter.channel === null) where.push('channel IS NULL');
    else if (filter.channel !== undefined) (where.push('channel = ?'), params.push(filter.channel));
    if (filter.state) (where.push('state = ?'), params.push(filter.state));
    params.push(filter.limit);
    const rows = await this.store.all<EventRow>(`SELECT ${COLUMNS} FROM use_queue_event WHERE ${where.join(' AND ')} ORDER BY id LIMIT ?`, params);
    return rows.map(viewOf);
  }

  async get(id: number): Promise<(EventView & { request: unknown }) | undefined> {
    const row = await this.store.one<EventRow>(`SELECT ${COLUMNS}, request FROM use_queue_event WHERE id = ?`, [id]);
    return row && { ...viewOf(row), request: readableRequest(JSON.parse(row.request) as InvokeRequest) };
  }

  /** Back to pending with its attempts reset, due at `now`; the errors are kept. Not a running event. */
  async replay(ids: readonly number[], now: number): Promise<number[]> {
    return this.store.transaction(async (tx) => {
      const done: number[] = [];
      for (const id of ids) {
        const r = await tx.run("UPDATE use_queue_event SET state = 'pending', attempts = 0, next_attempt_at = ? WHERE id = ? AND state <> 'running'", [now, id]);
        if (r.changes) done.push(id);
      }
      return done;
    });
  }

  async remove(ids: readonly number[]): Promise<number[]> {
    return this.store.transaction(async (tx) => {
      const done: number[] = [];
      for (const id of ids) if ((await tx.run("DELETE FROM use_queue_event WHERE id = ? AND state <> 'running'", [id])).changes) done.push(id);
      return done;
    });
  }
}

/** Which events an operator's replay or delete applies to. */
export interface Selector {
  id?: number;
  all?: boolean;
  /** Text the last error contains (case-insensitive), kind or message. */
  error?: string;
  /** A channel's events; null: background work; absent: every queue. */
  channel?: string | null;
  /** For `all` and `error`: which events; an `id` may be pending or dead. */
  state?: 'pending' | 'dead';
}

/** Ids of the events a selector names, with their queue; running events are never selected. */
export async function selectEvents(store: DataStore, s: Selector): Promise<Array<{ id: number; channel: string | null }>> {
  const where: string[] = ["state <> 'running'"];
  const params: unknown[] = [];
  if (s.id !== undefined) (where.push('id = ?'), params.push(s.id));
  else (where.push('state = ?'), params.push(s.state ?? 'dead'));
  if (s.channel === null) where.push('channel IS NULL');
  else if (s.channel !== undefined) (where.push('channel = ?'), params.push(s.channel));
  const rows = await store.all<Pick<EventRow, 'id' | 'channel' | 'errors'>>(`SELECT id, channel, errors FROM use_queue_event WHERE ${where.join(' AND ')} ORDER BY id`, params);
  const text = s.error?.toLowerCase();
  const matches = (errorsJson: string) => {
    const last = (JSON.parse(errorsJson) as AttemptError[]).at(-1);
    return last !== undefined && `${last.kind}: ${last.message}`.toLowerCase().includes(text!);
  };
  return rows.filter((r) => text === undefined || matches(r.errors)).map((r) => ({ id: r.id, channel: r.channel }));
}
