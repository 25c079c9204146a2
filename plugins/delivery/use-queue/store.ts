import { sqlTypes, type DataStore, type Dialect, type InvokeRequest, type Migration, type Queryable } from '../../../sdk/plugin/index.ts';

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
    {
      // The node responsible for the event: the one that accepted it, then the one running or
      // retrying it. Another node takes it over once that node is no longer up (several nodes on
      // one database). PostgreSQL ids come from a sequence in blocks, so nodes never collide.
      version: 2,
      up:
        'ALTER TABLE use_queue_event ADD COLUMN node TEXT; CREATE INDEX use_queue_event_node ON use_queue_event (node)' +
        (dialect === 'postgres'
          ? `; CREATE SEQUENCE use_queue_event_ids INCREMENT BY ${ID_BLOCK}; SELECT setval('use_queue_event_ids', COALESCE((SELECT MAX(id) FROM use_queue_event), 0) + 1, false)`
          : ''),
    },
  ];
}

/** Ids a node takes from the PostgreSQL sequence at once. */
export const ID_BLOCK = 64;

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

/** What an event source writes with an attempt's end; what it returns runs after the commit. */
export type SettleAlso = (tx: Queryable) => Promise<void | (() => void)>;

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
  node: string | null;
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

export function viewOf(row: Omit<EventRow, 'request' | 'running_cid' | 'node'>): EventView {
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
  const payload = rest.payloadFromBody && rest.rawBody && 'text' in rest.rawBody ? (JSON.parse(rest.rawBody.text) as unknown) : rest.payload;
  return { ...rest, input: { ...(payload as Record<string, unknown>), ...inputOverPayload } };
}

/** What a new event holds: what the worker needs to invoke its service. */
export interface NewEvent {
  id: number;
  channel: string | null;
  request: InvokeRequest;
  receivedAt: number;
  /** The accepting node. */
  node: string;
  /** Stored straight in the dead-letter queue (a source gave up on it), with its attempts' errors. */
  dead?: { attempts: number; errors: AttemptError[] };
}

/** An event a node holds in memory: enough to schedule it. */
export type PendingRow = Pick<EventRow, 'id' | 'channel' | 'service' | 'attempts' | 'next_attempt_at'>;

const COLUMNS = 'id, channel, service, state, cid, attempts, first_received_at, next_attempt_at, errors';

/** The statements on the events table; the scheduler keeps memory and table in step. */
export class QueueTable {
  private adoptions = 0;

  constructor(private readonly store: DataStore) {}

  static async open(store: DataStore): Promise<QueueTable> {
    await store.migrate('use-queue', queueMigrations(store.dialect));
    return new QueueTable(store);
  }

  /**
   * Resolves once the event is on stable storage (grouped commit); inside `tx`, once it is
   * written there (the caller's commit makes it durable). The request's delivery record is made
   * again at each attempt; only its source, if any, is kept.
   */
  async insert(e: NewEvent, tx?: Queryable): Promise<void> {
    const { cid, delivery, ...rest } = e.request;
    const request = delivery?.source ? { ...rest, delivery: { source: delivery.source } } : rest;
    const errors = e.dead ? JSON.stringify(e.dead.errors.map((x) => ({ ...x, message: x.message.slice(0, MAX_ERROR_TEXT) }))) : '[]';
    const write = (q: Queryable) =>
      q.run(
        'INSERT INTO use_queue_event (id, channel, service, state, cid, attempts, first_received_at, next_attempt_at, request, errors, node) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [e.id, e.channel, request.service, e.dead ? 'dead' : 'pending', cid, e.dead?.attempts ?? 0, e.receivedAt, e.receivedAt, JSON.stringify(request), errors, e.node],
      );
    if (tx) await write(tx);
    else await this.store.transaction(write, { durable: true });
  }

  /** Events of a tenant's services waiting (pending or running) on every node: what `queued_events` bounds. */
  async queuedOf(tenant: string): Promise<number> {
    const rows = await this.store.all<{ count: number | string }>(`SELECT COUNT(*) AS count FROM use_queue_event WHERE state <> 'dead' AND ${OF_TENANT}`, tenantParams(tenant));
    return Number(rows[0]?.count ?? 0);
  }

  /** Events in the dead-letter queue, by queue (channel; null: background work). */
  async deadCounts(): Promise<Array<{ channel: string | null; count: number }>> {
    return this.store.all<{ channel: string | null; count: number }>("SELECT channel, COUNT(*) AS count FROM use_queue_event WHERE state = 'dead' GROUP BY channel");
  }

  /**
   * Ids for new events. On SQLite (one node) they count up from the table's largest; on
   * PostgreSQL each node takes blocks of ID_BLOCK from a sequence, so ids stay unique across
   * nodes and rise within one node (not across nodes).
   */
  async idSource(): Promise<() => number | Promise<number>> {
    if (this.store.dialect === 'sqlite') {
      let last = (await this.store.one<{ m: number | null }>('SELECT MAX(id) AS m FROM use_queue_event'))?.m ?? 0;
      return () => ++last;
    }
    let next = 0;
    let end = 0;
    let refill: Promise<void> | undefined;
    const take = async (): Promise<number> => {
      while (next >= end) {
        refill ??= this.store.one<{ n: number }>("SELECT nextval('use_queue_event_ids') AS n").then((r) => {
          next = Number(r!.n);
          end = next + ID_BLOCK;
          refill = undefined;
        });
        await refill;
      }
      return next++;
    };
    return () => (next < end ? next++ : take());
  }

  /**
   * Takes over the events whose node is not live (a crash, another node gone): attempts left
   * running are recorded as interrupted and go back to pending. Each row is taken with a
   * conditional update, so when several nodes take over at once each event goes to one of them.
   * Returns the events now this node's, pending, to hold in memory, and how many were interrupted.
   */
  async adopt(self: string, live: ReadonlySet<string>, now: number): Promise<{ rows: PendingRow[]; interrupted: number }> {
    const others = [...live].filter((id) => id !== self);
    const notLive = `COALESCE(node, '') <> ?${others.length ? ` AND COALESCE(node, '') NOT IN (${others.map(() => '?').join(', ')})` : ''}`;
    const rows: PendingRow[] = [];
    // Attempts cut short: few, each with its error recorded.
    const running = await this.store.all<Pick<EventRow, 'id' | 'channel' | 'service' | 'attempts' | 'running_cid' | 'errors' | 'node'>>(
      `SELECT id, channel, service, attempts, running_cid, errors, node FROM use_queue_event WHERE state = 'running' AND ${notLive} ORDER BY id`,
      [self, ...others],
    );
    let interrupted = 0;
    for (const r of running) {
      const errors = withError(r.errors, { attempt: r.attempts, cid: r.running_cid ?? '', at: new Date(now).toISOString(), kind: 'Interrupted', message: 'the server stopped during this attempt' });
      const taken = await this.store.run("UPDATE use_queue_event SET state = 'pending', running_cid = NULL, next_attempt_at = ?, errors = ?, node = ? WHERE id = ? AND state = 'running' AND COALESCE(node, '') = ?", [now, errors, self, r.id, r.node ?? '']);
      if (!taken.changes) continue;
      interrupted++;
      rows.push({ id: r.id, channel: r.channel, service: r.service, attempts: r.attempts, next_attempt_at: now });
    }
    // Pending events, possibly many: claimed in one statement under a token only this call uses,
    // read back by it, then given this node's id.
    const token = `${self}~${now}~${++this.adoptions}`;
    const claimed = await this.store.run(`UPDATE use_queue_event SET node = ? WHERE state = 'pending' AND ${notLive}`, [token, self, ...others]);
    if (claimed.changes) {
      rows.push(...(await this.store.all<PendingRow>("SELECT id, channel, service, attempts, next_attempt_at FROM use_queue_event WHERE node = ? AND state = 'pending' ORDER BY id", [token])));
      await this.store.run('UPDATE use_queue_event SET node = ? WHERE node = ?', [self, token]);
    }
    rows.sort((x, y) => x.id - y.id);
    return { rows, interrupted };
  }

  /**
   * Marks an attempt started and returns what it needs, or undefined when the event is no longer
   * pending (deleted or replayed meanwhile by an operator): the update decides, not an earlier read.
   */
  async start(id: number, attemptCid: string, node: string): Promise<Pick<EventRow, 'cid' | 'attempts' | 'first_received_at' | 'request' | 'errors'> | undefined> {
    const r = await this.store.run("UPDATE use_queue_event SET state = 'running', attempts = attempts + 1, running_cid = ?, node = ? WHERE id = ? AND state = 'pending'", [attemptCid, node, id]);
    if (!r.changes) return undefined;
    return this.store.one('SELECT cid, attempts, first_received_at, request, errors FROM use_queue_event WHERE id = ?', [id]);
  }

  /**
   * An attempt that could not start (the runner of its queue is not registered yet): back to
   * pending, due at `at`, its attempt not counted.
   */
  async postpone(id: number, at: number): Promise<void> {
    await this.store.run("UPDATE use_queue_event SET state = 'pending', attempts = attempts - 1, running_cid = NULL, next_attempt_at = ? WHERE id = ? AND state = 'running'", [at, id]);
  }

  /** `also`: what an event source records with the attempt's end, in the same transaction. */
  async succeeded(id: number, also?: SettleAlso): Promise<void> {
    await this.settle('DELETE FROM use_queue_event WHERE id = ?', [id], also);
  }

  async retryLater(id: number, errors: string, at: number, also?: SettleAlso): Promise<void> {
    await this.settle("UPDATE use_queue_event SET state = 'pending', running_cid = NULL, next_attempt_at = ?, errors = ? WHERE id = ?", [at, errors, id], also);
  }

  async deadLetter(id: number, errors: string, also?: SettleAlso): Promise<void> {
    await this.settle("UPDATE use_queue_event SET state = 'dead', running_cid = NULL, errors = ? WHERE id = ?", [errors, id], also);
  }

  private async settle(sql: string, params: unknown[], also: SettleAlso | undefined): Promise<void> {
    if (!also) {
      await this.store.run(sql, params);
      return;
    }
    const then = await this.store.transaction(async (tx) => {
      await tx.run(sql, params);
      return also(tx);
    });
    then?.();
  }

  /** Events for operators, newest last; channel null selects background events, undefined every queue. */
  /** `tenant` given: the events of that tenant's services only. */
  async list(filter: { channel?: string | null; service?: string; state?: EventState; limit: number; afterId?: number; tenant?: string | undefined }): Promise<EventView[]> {
    const where: string[] = ['id > ?'];
    const params: unknown[] = [filter.afterId ?? 0];
    if (filter.tenant !== undefined) (where.push(OF_TENANT), params.push(...tenantParams(filter.tenant)));
    if (filter.service !== undefined) (where.push('service = ?'), params.push(filter.service));
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

  /** An event's request as stored (for plugins' replay checks). */
  async storedRequest(id: number): Promise<InvokeRequest | undefined> {
    const row = await this.store.one<Pick<EventRow, 'request'>>('SELECT request FROM use_queue_event WHERE id = ?', [id]);
    return row && (JSON.parse(row.request) as InvokeRequest);
  }

  /** Back to pending with its attempts reset, due at `now`; the errors are kept. Not a running event. */
  async replay(ids: readonly number[], now: number, node: string): Promise<number[]> {
    return this.store.transaction(async (tx) => {
      const done: number[] = [];
      for (const id of ids) {
        const r = await tx.run("UPDATE use_queue_event SET state = 'pending', attempts = 0, next_attempt_at = ?, node = ? WHERE id = ? AND state <> 'running'", [now, node, id]);
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
  /** One service's events, whichever queue they are in. */
  service?: string;
  /** For `all` and `error`: which events; an `id` may be pending or dead. */
  state?: 'pending' | 'dead';
}

/** Ids of the events a selector names, with their queue; running events are never selected. */
/**
 * Events of one tenant's services: their names start with `<tenant>/` (sdk/plugin/tenants.ts).
 * A prefix compare, not LIKE, whose `_` would match any character of a tenant's name.
 */
const OF_TENANT = 'substr(service, 1, ?) = ?';
const tenantParams = (tenant: string) => [tenant.length + 1, `${tenant}/`];

export async function selectEvents(store: DataStore, s: Selector, tenant?: string): Promise<Array<{ id: number; channel: string | null; service: string }>> {
  const where: string[] = ["state <> 'running'"];
  const params: unknown[] = [];
  if (tenant !== undefined) (where.push(OF_TENANT), params.push(...tenantParams(tenant)));
  if (s.service !== undefined) (where.push('service = ?'), params.push(s.service));
  if (s.id !== undefined) (where.push('id = ?'), params.push(s.id));
  else (where.push('state = ?'), params.push(s.state ?? 'dead'));
  if (s.channel === null) where.push('channel IS NULL');
  else if (s.channel !== undefined) (where.push('channel = ?'), params.push(s.channel));
  const rows = await store.all<Pick<EventRow, 'id' | 'channel' | 'service' | 'errors'>>(`SELECT id, channel, service, errors FROM use_queue_event WHERE ${where.join(' AND ')} ORDER BY id`, params);
  const text = s.error?.toLowerCase();
  const matches = (errorsJson: string) => {
    const last = (JSON.parse(errorsJson) as AttemptError[]).at(-1);
    return last !== undefined && `${last.kind}: ${last.message}`.toLowerCase().includes(text!);
  };
  return rows.filter((r) => text === undefined || matches(r.errors)).map((r) => ({ id: r.id, channel: r.channel, service: r.service }));
}
