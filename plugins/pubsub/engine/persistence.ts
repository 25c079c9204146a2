import type { Migration, Queryable } from '../../../sdk/plugin/index.ts';
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

/** Bound parameters per statement stay far below every dialect's limit. */
const CHUNK = 400;

function* chunks<T>(items: readonly T[]): Generator<T[]> {
  for (let i = 0; i < items.length; i += CHUNK) yield items.slice(i, i + CHUNK);
}

function marks(n: number): string {
  return new Array(n).fill('?').join(', ');
}

export async function insertMessage(tx: Queryable, m: Message, subKeys: readonly string[], retained: boolean): Promise<void> {
  await tx.run(
    `INSERT INTO pubsub_message (msg_id, seq, topic, data, size, mime_type, priority, expiration, expires_at,
       pub_time, recv_time, correl_id, in_reply_to, ext_client_id, publisher, retained)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      m.msgId, m.seq, m.topic, m.dataJson, m.size, m.mimeType, m.priority, m.expiration ?? null, m.expiresAt ?? null,
      m.pubTime, m.recvTime, m.correlId ?? null, m.inReplyTo ?? null, m.extClientId ?? null, m.publisher, retained ? 1 : 0,
    ],
  );
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

export interface MessageRow {
  msg_id: string;
  seq: number;
  topic: string;
  data: string;
  size: number;
  mime_type: string;
  priority: number;
  expiration: number | null;
  expires_at: number | null;
  pub_time: number;
  recv_time: number;
  correl_id: string | null;
  in_reply_to: string | null;
  ext_client_id: string | null;
  publisher: string;
  retained: number;
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
  const messages = await db.all<MessageRow>(
    `SELECT msg_id, seq, topic, data, size, mime_type, priority, expiration, expires_at, pub_time, recv_time,
       correl_id, in_reply_to, ext_client_id, publisher, retained FROM pubsub_message`,
  );
  const queue = await db.all<QueueRow>('SELECT sub_key, msg_id, delivery_count, enqueued_at FROM pubsub_queue');
  return { messages, subscriptions, queue };
}

export function messageFromRow(row: MessageRow): Message {
  return {
    msgId: row.msg_id,
    seq: Number(row.seq),
    topic: row.topic,
    data: JSON.parse(row.data),
    dataJson: row.data,
    size: Number(row.size),
    mimeType: row.mime_type,
    priority: Number(row.priority),
    expiration: row.expiration === null ? undefined : Number(row.expiration),
    expiresAt: row.expires_at === null ? undefined : Number(row.expires_at),
    pubTime: Number(row.pub_time),
    recvTime: Number(row.recv_time),
    correlId: row.correl_id ?? undefined,
    inReplyTo: row.in_reply_to ?? undefined,
    extClientId: row.ext_client_id ?? undefined,
    hasGd: true,
    publisher: row.publisher,
    persistent: true,
    refs: 0,
  };
}
