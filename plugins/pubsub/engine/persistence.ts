import { sqlTypes, type Dialect, type Migration, type Queryable } from '../../../sdk/plugin/index.ts';
import { FIELDS } from '../shared/projection.ts';
import { InsertShapes } from './coalesced-inserts.ts';
import type { Message, Subscription, SubscriptionSource } from './model.ts';

/**
 * The engine's tables. Times are milliseconds since the epoch (64-bit: `t.int` is BIGINT on
 * PostgreSQL). Only persistent records are stored: GD messages on non-ephemeral
 * topics, and subscriptions to non-ephemeral topics.
 *
 * Version 2 keys messages and queue rows by `seq` (unique, as msg_id is): a GD publish writes
 * two B-tree entries instead of five (v1 had a rowid table and an index per text key), and a
 * delivered message deletes two. On SQLite the queue is a WITHOUT ROWID table: its primary key
 * is the row.
 */
export function pubsubMigrations(dialect: Dialect): Migration[] {
  const t = sqlTypes(dialect);
  const clustered = dialect === 'sqlite' ? ' WITHOUT ROWID' : '';
  return [
    {
      version: 1,
      up: `
      CREATE TABLE pubsub_message (
        msg_id TEXT PRIMARY KEY,
        seq ${t.int} NOT NULL,
        topic TEXT NOT NULL,
        data TEXT NOT NULL,
        size ${t.int} NOT NULL,
        mime_type TEXT NOT NULL,
        priority ${t.int} NOT NULL,
        expiration ${t.int},
        expires_at ${t.int},
        pub_time ${t.int} NOT NULL,
        recv_time ${t.int} NOT NULL,
        correl_id TEXT,
        in_reply_to TEXT,
        ext_client_id TEXT,
        publisher TEXT NOT NULL,
        retained INTEGER NOT NULL
      );
      CREATE TABLE pubsub_subscription (
        sub_key TEXT PRIMARY KEY,
        endpoint TEXT NOT NULL,
        topic TEXT NOT NULL,
        source TEXT NOT NULL,
        created_at ${t.int} NOT NULL,
        UNIQUE (endpoint, topic)
      );
      CREATE TABLE pubsub_queue (
        sub_key TEXT NOT NULL,
        msg_id TEXT NOT NULL,
        delivery_count ${t.int} NOT NULL,
        enqueued_at ${t.int} NOT NULL,
        PRIMARY KEY (sub_key, msg_id)
      );
      CREATE INDEX pubsub_queue_msg ON pubsub_queue (msg_id)
    `,
    },
    {
      version: 2,
      up: `
      CREATE TABLE pubsub_message_v2 (
        seq ${t.int} PRIMARY KEY,
        msg_id TEXT NOT NULL,
        topic TEXT NOT NULL,
        data TEXT NOT NULL,
        size ${t.int} NOT NULL,
        mime_type TEXT NOT NULL,
        priority ${t.int} NOT NULL,
        expiration ${t.int},
        expires_at ${t.int},
        pub_time ${t.int} NOT NULL,
        recv_time ${t.int} NOT NULL,
        correl_id TEXT,
        in_reply_to TEXT,
        ext_client_id TEXT,
        publisher TEXT NOT NULL,
        retained INTEGER NOT NULL
      );
      INSERT INTO pubsub_message_v2 (${V1_MESSAGE_COLUMNS}) SELECT ${V1_MESSAGE_COLUMNS} FROM pubsub_message;
      CREATE TABLE pubsub_queue_v2 (
        seq ${t.int} NOT NULL,
        sub_key TEXT NOT NULL,
        delivery_count ${t.int} NOT NULL,
        enqueued_at ${t.int} NOT NULL,
        PRIMARY KEY (seq, sub_key)
      )${clustered};
      INSERT INTO pubsub_queue_v2 (seq, sub_key, delivery_count, enqueued_at)
        SELECT m.seq, q.sub_key, q.delivery_count, q.enqueued_at FROM pubsub_queue q JOIN pubsub_message m ON m.msg_id = q.msg_id;
      DROP TABLE pubsub_queue;
      DROP TABLE pubsub_message;
      ALTER TABLE pubsub_message_v2 RENAME TO pubsub_message;
      ALTER TABLE pubsub_queue_v2 RENAME TO pubsub_queue
    `,
    },
    // Versions 3 and 4 are PostgreSQL's alone (the next version is 5 on both).
    ...(dialect === 'postgres' ? [{ version: 3, up: CLUSTER_V3 }, { version: 4, up: CLUSTER_V4 }] : []),
  ];
}

/**
 * On PostgreSQL the database holds the queues for every node (cluster.ts): sequence numbers come
 * from a sequence; a queue row carries its message's priority and expiry, so a get claims rows in
 * delivery order from one index, and the lease of the node that delivers it.
 */
const CLUSTER_V3 = `
  CREATE SEQUENCE pubsub_seq;
  SELECT setval('pubsub_seq', COALESCE((SELECT MAX(seq) FROM pubsub_message), 0) + 1, false);
  ALTER TABLE pubsub_message ADD COLUMN has_gd INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE pubsub_queue ADD COLUMN priority INTEGER NOT NULL DEFAULT 5, ADD COLUMN expires_at BIGINT, ADD COLUMN lease_node TEXT, ADD COLUMN lease_until BIGINT;
  UPDATE pubsub_queue q SET priority = m.priority, expires_at = m.expires_at FROM pubsub_message m WHERE m.seq = q.seq;
  CREATE INDEX pubsub_queue_priority ON pubsub_queue (sub_key, priority DESC, seq);
  CREATE INDEX pubsub_queue_lifo ON pubsub_queue (sub_key, seq);
  CREATE INDEX pubsub_queue_expiry ON pubsub_queue (expires_at) WHERE expires_at IS NOT NULL;
  CREATE INDEX pubsub_message_retained ON pubsub_message (topic, seq) WHERE retained = 1;
  CREATE INDEX pubsub_message_expiry ON pubsub_message (expires_at) WHERE expires_at IS NOT NULL
`;

/**
 * Tenants' stored bytes (pubsub_bytes, cluster-sql.ts tenantBytes) are counted from an index of
 * tenants' messages only: a platform message (its topic starts with '/') is not in it, so the
 * platform's publishes pay no index entry for tenants' quotas.
 */
const CLUSTER_V4 = `
  CREATE INDEX pubsub_message_tenant ON pubsub_message (split_part(topic, '/', 1)) INCLUDE (size) WHERE left(topic, 1) <> '/'
`;

const V1_MESSAGE_COLUMNS =
  'seq, msg_id, topic, data, size, mime_type, priority, expiration, expires_at, pub_time, recv_time, correl_id, in_reply_to, ext_client_id, publisher, retained';

const MARKS: string[] = [];
function marks(n: number): string {
  return (MARKS[n] ??= new Array(n).fill('?').join(', '));
}

type Stored = Extract<(typeof FIELDS)[number], { sql: object }>;
type SqlValue<K> = K extends 'int' ? number : K extends 'int?' ? number | null : K extends 'text?' ? string | null : string;
type JsValue<K> = K extends 'int' ? number : K extends 'int?' ? number | undefined : K extends 'text?' ? string | undefined : K extends 'json' ? unknown : string;

/** What pubsub_message holds of a message: the columns of shared/projection.ts, and whether it is retained. */
export type MessageRow = { [F in Stored as F['sql']['column']]: SqlValue<F['sql']['kind']> } & { retained: number };
export type StoredMessage = { [F in Stored as F['prop']]: JsValue<F['sql']['kind']> } & {
  [F in Stored as F['sql'] extends { text: infer T extends string } ? T : never]: string;
};

export const STORED = FIELDS.filter((f): f is Stored => 'sql' in f);
export const MESSAGE_COLUMNS = [...STORED.map((f) => f.sql.column), 'retained'];
const INSERT_MESSAGE = `INSERT INTO pubsub_message (${MESSAGE_COLUMNS.join(', ')}) VALUES (${marks(MESSAGE_COLUMNS.length)})`;

export function messageValues(m: StoredMessage, retained: boolean): unknown[] {
  const values: unknown[] = STORED.map((f) => ('text' in f.sql ? m[f.sql.text] : m[f.prop] ?? null));
  values.push(retained ? 1 : 0);
  return values;
}

/** Bound parameters per statement stay far below every dialect's limit. */
const CHUNK = 256;

/**
 * Lists of keys in chunks whose lengths are powers of two (the last chunk padded by repeating a
 * key, harmless in `IN (...)`): a handful of statement texts, so the store's prepared-statement
 * cache stays small whatever the batch sizes.
 */
function* chunks(items: readonly number[]): Generator<number[]> {
  for (let i = 0; i < items.length; i += CHUNK) {
    const chunk = items.slice(i, i + CHUNK);
    let size = 1;
    while (size < chunk.length) size *= 2;
    while (chunk.length < size) chunk.push(chunk[0]!);
    yield chunk;
  }
}

const INSERT_QUEUE_ROW = 'INSERT INTO pubsub_queue (seq, sub_key, delivery_count, enqueued_at) VALUES (?, ?, 0, ?)';

/** A publish's two INSERTs: a batch of publishes sends their rows as multi-row statements (group-commit.ts). */
export const PUBLISH_INSERTS = new InsertShapes([INSERT_MESSAGE, INSERT_QUEUE_ROW]);

export async function insertMessage(tx: Queryable, m: Message, subKeys: readonly string[], retained: boolean): Promise<void> {
  await tx.run(INSERT_MESSAGE, messageValues(m, retained));
  for (const subKey of subKeys) await tx.run(INSERT_QUEUE_ROW, [m.seq, subKey, m.recvTime]);
}

/** Removes messages and every queue row holding them. */
export async function deleteMessages(tx: Queryable, seqs: readonly number[]): Promise<void> {
  for (const chunk of chunks(seqs)) {
    await tx.run(`DELETE FROM pubsub_queue WHERE seq IN (${marks(chunk.length)})`, chunk);
    await tx.run(`DELETE FROM pubsub_message WHERE seq IN (${marks(chunk.length)})`, chunk);
  }
}

/** Removes delivered (or dropped) queue rows, and the messages no queue holds any more. */
export async function deleteQueueRows(
  tx: Queryable,
  rows: ReadonlyArray<{ subKey: string; seq: number }>,
  unreferenced: readonly number[],
): Promise<void> {
  // A get takes from one subscription, or from a few (variant B): one statement per subscription and chunk.
  const bySub = new Map<string, number[]>();
  for (const { subKey, seq } of rows) {
    const seqs = bySub.get(subKey);
    if (seqs) seqs.push(seq);
    else bySub.set(subKey, [seq]);
  }
  for (const [subKey, seqs] of bySub) {
    for (const chunk of chunks(seqs)) {
      await tx.run(`DELETE FROM pubsub_queue WHERE sub_key = ? AND seq IN (${marks(chunk.length)})`, [subKey, ...chunk]);
    }
  }
  for (const chunk of chunks(unreferenced)) {
    await tx.run(`DELETE FROM pubsub_message WHERE seq IN (${marks(chunk.length)})`, chunk);
  }
}

export async function setDeliveryCount(tx: Queryable, subKey: string, seq: number, count: number): Promise<void> {
  await tx.run('UPDATE pubsub_queue SET delivery_count = ? WHERE seq = ? AND sub_key = ?', [count, seq, subKey]);
}

export async function markRetained(tx: Queryable, seqs: readonly number[], retained: boolean): Promise<void> {
  for (const chunk of chunks(seqs)) {
    await tx.run(`UPDATE pubsub_message SET retained = ? WHERE seq IN (${marks(chunk.length)})`, [retained ? 1 : 0, ...chunk]);
  }
}

export async function moveRetainedRows(tx: Queryable, subKey: string, seqs: readonly number[], at: number): Promise<void> {
  await markRetained(tx, seqs, false);
  for (const seq of seqs) {
    await tx.run(INSERT_QUEUE_ROW, [seq, subKey, at]);
  }
}

export async function insertSubscription(tx: Queryable, s: Subscription): Promise<void> {
  await tx.run('INSERT INTO pubsub_subscription (sub_key, endpoint, topic, source, created_at) VALUES (?, ?, ?, ?, ?)', [
    s.subKey,
    s.endpoint,
    s.topic,
    s.source,
    s.createdAt,
  ]);
}

export async function setSubscriptionSource(tx: Queryable, subKey: string, source: SubscriptionSource): Promise<void> {
  await tx.run('UPDATE pubsub_subscription SET source = ? WHERE sub_key = ?', [source, subKey]);
}

/** Unsubscribing is rare: its queue rows go by a scan, so no publish pays for an index on sub_key. */
export async function deleteSubscription(tx: Queryable, subKey: string, unreferenced: readonly number[]): Promise<void> {
  await tx.run('DELETE FROM pubsub_queue WHERE sub_key = ?', [subKey]);
  await tx.run('DELETE FROM pubsub_subscription WHERE sub_key = ?', [subKey]);
  for (const chunk of chunks(unreferenced)) {
    await tx.run(`DELETE FROM pubsub_message WHERE seq IN (${marks(chunk.length)})`, chunk);
  }
}

export interface SubscriptionRow {
  sub_key: string;
  endpoint: string;
  topic: string;
  source: string;
  created_at: number;
}

export interface QueueRow {
  sub_key: string;
  seq: number;
  delivery_count: number;
  enqueued_at: number;
}

export async function loadAll(db: Queryable): Promise<{ messages: MessageRow[]; subscriptions: SubscriptionRow[]; queue: QueueRow[] }> {
  const subscriptions = await db.all<SubscriptionRow>('SELECT sub_key, endpoint, topic, source, created_at FROM pubsub_subscription');
  const messages = await db.all<MessageRow>(`SELECT ${MESSAGE_COLUMNS.join(', ')} FROM pubsub_message`);
  const queue = await db.all<QueueRow>('SELECT seq, sub_key, delivery_count, enqueued_at FROM pubsub_queue');
  return { messages, subscriptions, queue };
}

export function messageFromRow(row: MessageRow): Message {
  const m: Record<string, unknown> = {};
  for (const f of STORED) {
    const v = row[f.sql.column];
    if (f.sql.kind === 'json') {
      m[f.prop] = JSON.parse(v as string);
      m[f.sql.text] = v;
    } else if (f.sql.kind === 'int' || (f.sql.kind === 'int?' && v !== null)) {
      m[f.prop] = Number(v);
    } else {
      m[f.prop] = v ?? undefined;
    }
  }
  return { ...(m as StoredMessage), hasGd: true, persistent: true, refs: 0 };
}
