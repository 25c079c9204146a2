import type { Migration, Queryable } from '../../../sdk/plugin/index.ts';
import { FIELDS } from '../shared/projection.ts';
import type { Message, Subscription, SubscriptionSource } from './model.ts';

/**
 * The engine's tables. Times are milliseconds since the epoch (a PostgreSQL store maps
 * INTEGER to BIGINT). Only persistent records are stored: GD messages on non-ephemeral
 * topics, and subscriptions to non-ephemeral topics.
 */
export const PUBSUB_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    up: `
      CREATE TABLE pubsub_message (
        msg_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        topic TEXT NOT NULL,
        data TEXT NOT NULL,
        size INTEGER NOT NULL,
        mime_type TEXT NOT NULL,
        priority INTEGER NOT NULL,
        expiration INTEGER,
        expires_at INTEGER,
        pub_time INTEGER NOT NULL,
        recv_time INTEGER NOT NULL,
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
        created_at INTEGER NOT NULL,
        UNIQUE (endpoint, topic)
      );
      CREATE TABLE pubsub_queue (
        sub_key TEXT NOT NULL,
        msg_id TEXT NOT NULL,
        delivery_count INTEGER NOT NULL,
        enqueued_at INTEGER NOT NULL,
        PRIMARY KEY (sub_key, msg_id)
      );
      CREATE INDEX pubsub_queue_msg ON pubsub_queue (msg_id)
    `,
  },
];

type Stored = Extract<(typeof FIELDS)[number], { sql: object }>;
type SqlValue<K> = K extends 'int' ? number : K extends 'int?' ? number | null : K extends 'text?' ? string | null : string;
type JsValue<K> = K extends 'int' ? number : K extends 'int?' ? number | undefined : K extends 'text?' ? string | undefined : K extends 'json' ? unknown : string;

/** What pubsub_message holds of a message: the columns of shared/projection.ts, and whether it is retained. */
export type MessageRow = { [F in Stored as F['sql']['column']]: SqlValue<F['sql']['kind']> } & { retained: number };
type StoredMessage = { [F in Stored as F['prop']]: JsValue<F['sql']['kind']> } & {
  [F in Stored as F['sql'] extends { text: infer T extends string } ? T : never]: string;
};

const STORED = FIELDS.filter((f): f is Stored => 'sql' in f);
const MESSAGE_COLUMNS = [...STORED.map((f) => f.sql.column), 'retained'];
const INSERT_MESSAGE = `INSERT INTO pubsub_message (${MESSAGE_COLUMNS.join(', ')}) VALUES (${marks(MESSAGE_COLUMNS.length)})`;

function messageValues(m: StoredMessage, retained: boolean): unknown[] {
  const values: unknown[] = STORED.map((f) => ('text' in f.sql ? m[f.sql.text] : m[f.prop] ?? null));
  values.push(retained ? 1 : 0);
  return values;
}

/** Bound parameters per statement stay far below every dialect's limit. */
const CHUNK = 400;

function* chunks<T>(items: readonly T[]): Generator<T[]> {
  for (let i = 0; i < items.length; i += CHUNK) yield items.slice(i, i + CHUNK);
}

function marks(n: number): string {
  return new Array(n).fill('?').join(', ');
}

export async function insertMessage(tx: Queryable, m: Message, subKeys: readonly string[], retained: boolean): Promise<void> {
  await tx.run(INSERT_MESSAGE, messageValues(m, retained));
  for (const subKey of subKeys) {
    await tx.run('INSERT INTO pubsub_queue (sub_key, msg_id, delivery_count, enqueued_at) VALUES (?, ?, 0, ?)', [
      subKey,
      m.msgId,
      m.recvTime,
    ]);
  }
}

export async function deleteMessages(tx: Queryable, msgIds: readonly string[]): Promise<void> {
  for (const ids of chunks(msgIds)) {
    await tx.run(`DELETE FROM pubsub_queue WHERE msg_id IN (${marks(ids.length)})`, ids);
    await tx.run(`DELETE FROM pubsub_message WHERE msg_id IN (${marks(ids.length)})`, ids);
  }
}

/** Removes delivered (or dropped) queue rows, and the messages no queue holds any more. */
export async function deleteQueueRows(
  tx: Queryable,
  rows: ReadonlyArray<{ subKey: string; msgId: string }>,
  unreferencedMsgIds: readonly string[],
): Promise<void> {
  for (const row of rows) {
    await tx.run('DELETE FROM pubsub_queue WHERE sub_key = ? AND msg_id = ?', [row.subKey, row.msgId]);
  }
  for (const ids of chunks(unreferencedMsgIds)) {
    await tx.run(`DELETE FROM pubsub_message WHERE msg_id IN (${marks(ids.length)})`, ids);
  }
}

export async function setDeliveryCount(tx: Queryable, subKey: string, msgId: string, count: number): Promise<void> {
  await tx.run('UPDATE pubsub_queue SET delivery_count = ? WHERE sub_key = ? AND msg_id = ?', [count, subKey, msgId]);
}

export async function markRetained(tx: Queryable, msgIds: readonly string[], retained: boolean): Promise<void> {
  for (const ids of chunks(msgIds)) {
    await tx.run(`UPDATE pubsub_message SET retained = ? WHERE msg_id IN (${marks(ids.length)})`, [retained ? 1 : 0, ...ids]);
  }
}

export async function moveRetainedRows(tx: Queryable, subKey: string, msgIds: readonly string[], at: number): Promise<void> {
  await markRetained(tx, msgIds, false);
  for (const msgId of msgIds) {
    await tx.run('INSERT INTO pubsub_queue (sub_key, msg_id, delivery_count, enqueued_at) VALUES (?, ?, 0, ?)', [subKey, msgId, at]);
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

export async function deleteSubscription(tx: Queryable, subKey: string, unreferencedMsgIds: readonly string[]): Promise<void> {
  await tx.run('DELETE FROM pubsub_queue WHERE sub_key = ?', [subKey]);
  await tx.run('DELETE FROM pubsub_subscription WHERE sub_key = ?', [subKey]);
  for (const ids of chunks(unreferencedMsgIds)) {
    await tx.run(`DELETE FROM pubsub_message WHERE msg_id IN (${marks(ids.length)})`, ids);
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
  msg_id: string;
  delivery_count: number;
  enqueued_at: number;
}

export async function loadAll(db: Queryable): Promise<{ messages: MessageRow[]; subscriptions: SubscriptionRow[]; queue: QueueRow[] }> {
  const subscriptions = await db.all<SubscriptionRow>('SELECT sub_key, endpoint, topic, source, created_at FROM pubsub_subscription');
  const messages = await db.all<MessageRow>(`SELECT ${MESSAGE_COLUMNS.join(', ')} FROM pubsub_message`);
  const queue = await db.all<QueueRow>('SELECT sub_key, msg_id, delivery_count, enqueued_at FROM pubsub_queue');
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
