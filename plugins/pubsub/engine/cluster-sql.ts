import type { Queryable } from '../../../sdk/plugin/index.ts';
import { MESSAGE_COLUMNS, messageFromRow, messageValues, STORED, type MessageRow } from './persistence.ts';
import type { Message, SubscriptionSource } from './model.ts';

/**
 * The SQL of the shared strategy (cluster.ts): PostgreSQL only, so arrays travel as parameters
 * (`unnest`, `= ANY`) and a batch of any size is one statement of a fixed text. Advisory-lock keys
 * carry the schema, so stores in different schemas of one database never wait on each other.
 */

const ARRAY_TYPE: Record<string, string> = { text: 'text[]', 'text?': 'text[]', int: 'bigint[]', 'int?': 'bigint[]', json: 'text[]' };
/** The message columns a publish sends (all but seq, which the sequence assigns) and their array types. */
const SENT = [...STORED.filter((f) => f.sql.column !== 'seq').map((f) => ({ column: f.sql.column, type: ARRAY_TYPE[f.sql.kind]! })), { column: 'retained', type: 'int[]' }, { column: 'has_gd', type: 'int[]' }];
const INSERTED = [...MESSAGE_COLUMNS, 'has_gd'];
/**
 * A batch of messages and their queue rows in one statement: the messages get their seq from the
 * sequence, in the order sent, and the queue rows find it by msg_id.
 */
const INSERT_PUBLISHES = `WITH msgs AS (
    INSERT INTO pubsub_message (${INSERTED.join(', ')})
    SELECT ${INSERTED.map((c) => (c === 'seq' ? "nextval('pubsub_seq')" : `u.${c}`)).join(', ')}
    FROM unnest(${SENT.map((c) => `?::${c.type}`).join(', ')}) WITH ORDINALITY AS u(${SENT.map((c) => c.column).join(', ')}, ord)
    ORDER BY u.ord
    RETURNING seq, msg_id
  )
  INSERT INTO pubsub_queue (seq, sub_key, delivery_count, enqueued_at, priority, expires_at)
  SELECT msgs.seq, r.k, 0, ?, r.p, r.e FROM unnest(?::text[], ?::text[], ?::int[], ?::bigint[]) AS r(id, k, p, e) JOIN msgs ON msgs.msg_id = r.id`;
const INSERT_QUEUE_ROWS =
  'INSERT INTO pubsub_queue (seq, sub_key, delivery_count, enqueued_at, priority, expires_at) SELECT s, k, 0, ?, p, e FROM unnest(?::bigint[], ?::text[], ?::int[], ?::bigint[]) AS r(s, k, p, e)';
const SELECT_MESSAGE = MESSAGE_COLUMNS.map((c) => `m.${c}`).join(', ') + ', m.has_gd';

export type ClusterMessageRow = MessageRow & { has_gd: number };

export function messageOf(row: ClusterMessageRow): Message {
  const msg = messageFromRow(row);
  msg.hasGd = Number(row.has_gd) === 1;
  return msg;
}

function topicLockKey(topic: string): string {
  return `svc.pubsub.topic:${topic}`;
}

/**
 * Publishes take a topic's lock shared (they do not exclude each other), subscribe and
 * unsubscribe take it exclusively: a publish that found no subscriber has committed its retained
 * message before a new subscription moves the retained messages, and one that found subscribers
 * has its queue rows in before an unsubscribe deletes the queue.
 */
export async function lockTopicsShared(tx: Queryable, topics: readonly string[]): Promise<void> {
  await tx.all("SELECT pg_advisory_xact_lock_shared(hashtextextended(current_schema() || ':' || t, 0)) FROM unnest(?::text[]) AS t ORDER BY t", [topics.map(topicLockKey)]);
}

export async function lockTopic(tx: Queryable, topic: string): Promise<void> {
  await tx.all("SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || ':' || ?, 0))", [topicLockKey(topic)]);
}

/** A tenant's lock for counting its stored bytes near its quota (cluster.ts heldBytesFor), taken in a fixed order. */
export async function lockTenantBytes(tx: Queryable, tenants: readonly string[]): Promise<void> {
  if (tenants.length === 0) return;
  await tx.all("SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || ':' || t, 0)) FROM unnest(?::text[]) AS t ORDER BY t", [tenants.map((t) => `svc.pubsub.bytes:${t}`)]);
}

/**
 * Bytes of message data each tenant's messages hold (every stored message, retained or queued,
 * once). A tenant's topic is `<tenant>/…`, a platform's starts with '/': the condition is the
 * partial index's (migration 4), which platform messages stay out of.
 */
export async function tenantBytes(tx: Queryable, tenants: readonly string[]): Promise<Map<string, number>> {
  const rows = await tx.all<{ tenant: string; bytes: number }>(
    "SELECT split_part(topic, '/', 1) AS tenant, sum(size) AS bytes FROM pubsub_message WHERE left(topic, 1) <> '/' AND split_part(topic, '/', 1) = ANY(?::text[]) GROUP BY 1",
    [tenants],
  );
  return new Map(rows.map((r) => [r.tenant, Number(r.bytes)]));
}

/** Whether this transaction got the sweep's lock (one node sweeps at a time; the others skip). */
export async function trySweepLock(tx: Queryable): Promise<boolean> {
  const row = await tx.one<{ got: number }>("SELECT pg_try_advisory_xact_lock(hashtextextended(current_schema() || ':svc.pubsub.sweep', 0)) AS got");
  return row?.got === 1;
}

/** Commits of this transaction do not wait for the WAL flush (what it writes may be lost by a PostgreSQL crash, never by a node's). */
export async function asyncCommit(tx: Queryable): Promise<void> {
  await tx.run('SET LOCAL synchronous_commit = off');
}

export async function subscribersOf(tx: Queryable, topics: readonly string[]): Promise<Array<{ sub_key: string; topic: string }>> {
  return tx.all('SELECT sub_key, topic FROM pubsub_subscription WHERE topic = ANY(?::text[]) ORDER BY created_at, sub_key', [topics]);
}

/**
 * Queued entries per subscription, those in flight left out (they leave the queue once answered),
 * counted up to `cap` at most: a publish only needs to know whether max_depth is reached, and the
 * count then costs at most max_depth index entries however long the queue.
 */
export async function queueDepths(tx: Queryable, subKeys: readonly string[], now: number, cap = 2 ** 31 - 1): Promise<Map<string, number>> {
  if (subKeys.length === 0) return new Map();
  const rows = await tx.all<{ sub_key: string; n: number }>(
    `SELECT k AS sub_key, (SELECT count(*) FROM (SELECT 1 FROM pubsub_queue q WHERE q.sub_key = k AND (q.lease_until IS NULL OR q.lease_until <= ?) LIMIT ?) AS c) AS n
     FROM unnest(?::text[]) AS k`,
    [now, cap, subKeys],
  );
  return new Map(rows.map((r) => [r.sub_key, Number(r.n)]));
}

export async function retainedCounts(tx: Queryable, topics: readonly string[]): Promise<Map<string, number>> {
  if (topics.length === 0) return new Map();
  const rows = await tx.all<{ topic: string; n: number }>('SELECT topic, count(*) AS n FROM pubsub_message WHERE retained = 1 AND topic = ANY(?::text[]) GROUP BY topic', [topics]);
  return new Map(rows.map((r) => [r.topic, Number(r.n)]));
}

/** Messages (each with its retained flag) and their queue rows, one statement for the whole batch. */
export async function insertMessages(tx: Queryable, items: ReadonlyArray<{ msg: Message; subKeys: readonly string[] }>, now: number): Promise<void> {
  const columns: unknown[][] = SENT.map(() => []);
  const seqAt = INSERTED.indexOf('seq');
  const ids: string[] = [];
  const keys: string[] = [];
  const priorities: number[] = [];
  const expiries: Array<number | null> = [];
  for (const { msg, subKeys } of items) {
    const values = [...messageValues(msg, subKeys.length === 0), msg.hasGd ? 1 : 0];
    values.splice(seqAt, 1);
    values.forEach((v, i) => columns[i]!.push(v));
    for (const key of subKeys) {
      ids.push(msg.msgId);
      keys.push(key);
      priorities.push(msg.priority);
      expiries.push(msg.expiresAt ?? null);
    }
  }
  await tx.run(INSERT_PUBLISHES, [...columns, now, ids, keys, priorities, expiries]);
}

export interface ClaimRow extends ClusterMessageRow {
  sub_key: string;
  delivery_count: number;
  lease_until: number | null;
}

/**
 * Locks up to `limit` deliverable rows of the subscriptions in delivery order. Rows another get
 * holds are skipped, not waited for; rows whose lease ran out (their node died, or never
 * answered) are deliverable again.
 */
export async function claimCandidates(tx: Queryable, subKeys: readonly string[], order: 'lifo' | 'priority', limit: number, now: number): Promise<ClaimRow[]> {
  const orderBy = order === 'lifo' ? 'q.seq DESC' : 'q.priority DESC, q.seq';
  return tx.all<ClaimRow>(
    `SELECT ${SELECT_MESSAGE}, q.sub_key, q.delivery_count, q.lease_until FROM pubsub_queue q JOIN pubsub_message m ON m.seq = q.seq
     WHERE q.sub_key = ANY(?::text[]) AND (q.lease_until IS NULL OR q.lease_until <= ?) AND (q.expires_at IS NULL OR q.expires_at > ?)
     ORDER BY ${orderBy} LIMIT ? FOR UPDATE OF q SKIP LOCKED`,
    [subKeys, now, now, limit],
  );
}

/** Marks claimed rows in flight for this node; a row taken over from an expired lease counts a delivery attempt. */
export async function lease(tx: Queryable, rows: ReadonlyArray<{ seq: number; subKey: string }>, node: string, until: number): Promise<void> {
  await tx.run(
    `UPDATE pubsub_queue q SET lease_node = ?, lease_until = ?, delivery_count = q.delivery_count + (CASE WHEN q.lease_until IS NULL THEN 0 ELSE 1 END)
     FROM unnest(?::bigint[], ?::text[]) AS c(seq, sub_key) WHERE q.seq = c.seq AND q.sub_key = c.sub_key`,
    [node, until, rows.map((r) => r.seq), rows.map((r) => r.subKey)],
  );
}

/** Deletes delivered rows, then the messages no queue holds any more. */
export async function deleteDelivered(tx: Queryable, rows: ReadonlyArray<{ seq: number; subKey: string }>): Promise<void> {
  const seqs = rows.map((r) => r.seq);
  await tx.run('DELETE FROM pubsub_queue q USING unnest(?::bigint[], ?::text[]) AS d(seq, sub_key) WHERE q.seq = d.seq AND q.sub_key = d.sub_key', [seqs, rows.map((r) => r.subKey)]);
  await deleteUnreferenced(tx, seqs);
}

/**
 * Two nodes delivering one message's last two copies at once may each still see the other's row
 * and both keep the message: the sweep's deleteOrphans catches those.
 */
export async function deleteUnreferenced(tx: Queryable, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await tx.run('DELETE FROM pubsub_message m WHERE m.seq = ANY(?::bigint[]) AND m.retained = 0 AND NOT EXISTS (SELECT 1 FROM pubsub_queue q WHERE q.seq = m.seq)', [
    [...new Set(seqs)].sort((a, b) => a - b),
  ]);
}

/** The response was not written: the rows go back (if this node still holds them), their delivery count raised. */
export async function release(tx: Queryable, rows: ReadonlyArray<{ seq: number; subKey: string }>, node: string): Promise<void> {
  await tx.run(
    `UPDATE pubsub_queue q SET lease_node = NULL, lease_until = NULL, delivery_count = q.delivery_count + 1
     FROM unnest(?::bigint[], ?::text[]) AS d(seq, sub_key) WHERE q.seq = d.seq AND q.sub_key = d.sub_key AND q.lease_node = ?`,
    [rows.map((r) => r.seq), rows.map((r) => r.subKey), node],
  );
}

export interface SubscriptionRowC {
  sub_key: string;
  endpoint: string;
  topic: string;
  source: SubscriptionSource;
  created_at: number;
}

export async function subscriptionRows(db: Queryable): Promise<SubscriptionRowC[]> {
  return db.all<SubscriptionRowC>('SELECT sub_key, endpoint, topic, source, created_at FROM pubsub_subscription');
}

export async function subscriptionOf(db: Queryable, endpoint: string, topic: string): Promise<SubscriptionRowC | undefined> {
  return db.one<SubscriptionRowC>('SELECT sub_key, endpoint, topic, source, created_at FROM pubsub_subscription WHERE endpoint = ? AND topic = ?', [endpoint, topic]);
}

/** Moves a topic's live retained messages to a new subscription; returns how many. */
export async function moveRetained(tx: Queryable, topic: string, subKey: string, now: number): Promise<number> {
  const moved = await tx.all<{ seq: number; priority: number; expires_at: number | null }>(
    'UPDATE pubsub_message SET retained = 0 WHERE topic = ? AND retained = 1 AND (expires_at IS NULL OR expires_at > ?) RETURNING seq, priority, expires_at',
    [topic, now],
  );
  if (moved.length === 0) return 0;
  await tx.run(INSERT_QUEUE_ROWS, [now, moved.map((r) => Number(r.seq)), moved.map(() => subKey), moved.map((r) => Number(r.priority)), moved.map((r) => r.expires_at)]);
  return moved.length;
}

/** Deletes a subscription, its queue and the messages only it held; whether it existed. */
export async function deleteSubscription(tx: Queryable, subKey: string): Promise<boolean> {
  const gone = await tx.run('DELETE FROM pubsub_subscription WHERE sub_key = ?', [subKey]);
  const seqs = await tx.all<{ seq: number }>('DELETE FROM pubsub_queue WHERE sub_key = ? RETURNING seq', [subKey]);
  await deleteUnreferenced(tx, seqs.map((r) => Number(r.seq)));
  return gone.changes > 0;
}

/** Messages of topics no longer configured (their subscriptions are deleted apart). */
export async function deleteMessagesOutside(tx: Queryable, topics: readonly string[]): Promise<number> {
  await tx.run('DELETE FROM pubsub_queue q USING pubsub_message m WHERE m.seq = q.seq AND m.topic <> ALL(?::text[])', [topics]);
  return (await tx.run('DELETE FROM pubsub_message WHERE topic <> ALL(?::text[])', [topics])).changes;
}

/** Expired queue rows and messages; returns how many queue rows and retained messages went. */
export async function deleteExpired(tx: Queryable, now: number): Promise<number> {
  const rows = (await tx.run('DELETE FROM pubsub_queue WHERE expires_at <= ?', [now])).changes;
  const retained = (await tx.run('DELETE FROM pubsub_message WHERE expires_at <= ? AND retained = 1', [now])).changes;
  await tx.run('DELETE FROM pubsub_message WHERE expires_at <= ?', [now]);
  return rows + retained;
}

export async function deleteOrphans(tx: Queryable): Promise<number> {
  return (await tx.run('DELETE FROM pubsub_message m WHERE m.retained = 0 AND NOT EXISTS (SELECT 1 FROM pubsub_queue q WHERE q.seq = m.seq)')).changes;
}

/** Per subscription: queued entries (not in flight) — the depth the stats and control ops show. */
export async function depthsBySubscription(db: Queryable, now: number): Promise<Array<SubscriptionRowC & { depth: number }>> {
  const rows = await db.all<SubscriptionRowC & { depth: number }>(
    `SELECT s.sub_key, s.endpoint, s.topic, s.source, s.created_at, count(q.seq) AS depth
     FROM pubsub_subscription s LEFT JOIN pubsub_queue q ON q.sub_key = s.sub_key AND (q.lease_until IS NULL OR q.lease_until <= ?) AND (q.expires_at IS NULL OR q.expires_at > ?)
     GROUP BY s.sub_key, s.endpoint, s.topic, s.source, s.created_at`,
    [now, now],
  );
  return rows.map((r) => ({ ...r, depth: Number(r.depth) }));
}

export async function retainedByTopic(db: Queryable): Promise<Map<string, number>> {
  const rows = await db.all<{ topic: string; n: number }>('SELECT topic, count(*) AS n FROM pubsub_message WHERE retained = 1 GROUP BY topic');
  return new Map(rows.map((r) => [r.topic, Number(r.n)]));
}

export async function peekRows(db: Queryable, subKey: string, limit: number, now: number): Promise<Array<ClusterMessageRow & { delivery_count: number }>> {
  return db.all(
    `SELECT ${SELECT_MESSAGE}, q.delivery_count FROM pubsub_queue q JOIN pubsub_message m ON m.seq = q.seq
     WHERE q.sub_key = ? AND (q.lease_until IS NULL OR q.lease_until <= ?) AND (q.expires_at IS NULL OR q.expires_at > ?)
     ORDER BY q.priority DESC, q.seq LIMIT ?`,
    [subKey, now, now, limit],
  );
}
