/**
 * The SQLite store's writer thread: it runs write batches in transactions on its own connection
 * to the store's file, so their statements and COMMIT's WAL write cost the kernel's event loop
 * nothing. Bundled to one CommonJS text and started with `eval` (kernel/store/sqlite-writer.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';
import type { WriterBatch, WriterClose, WriterOptions, WriterReply } from './writer-protocol.ts';

const options = workerData as WriterOptions;
// The line for this Node, found by the store (kernel/platform/native.ts): this text runs outside the project.
const Driver = require(options.driver) as typeof BetterSqlite3;
const db = new Driver(options.file);
// Per connection: the same settings as the store's own connection (kernel/store/sqlite.ts).
db.pragma('synchronous = NORMAL');
db.pragma('busy_timeout = 5000');
db.pragma('foreign_keys = ON');
const texts = new Map<number, string>();
const prepared = new Map<number, BetterSqlite3.Statement>();

/** Prepared on first use: a text that does not prepare fails each batch using it, and only those. */
function statement(n: number): BetterSqlite3.Statement {
  let st = prepared.get(n);
  if (!st) {
    const sql = texts.get(n);
    if (sql === undefined) throw new Error(`writer thread: statement ${n} was never sent`);
    st = db.prepare(sql);
    prepared.set(n, st);
  }
  return st;
}

function runBatch(batch: WriterBatch): void {
  for (const [n, sql] of batch.texts) texts.set(n, sql);
  const list = batch.statements;
  db.exec('BEGIN IMMEDIATE');
  try {
    for (let i = 0; i < list.length; i += 2) statement(list[i] as number).run(...(list[i + 1] as unknown[]));
    db.exec('COMMIT');
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

parentPort!.on('message', (message: WriterBatch | WriterClose) => {
  if ('close' in message) {
    db.close();
    parentPort!.close();
    return;
  }
  let reply: WriterReply;
  try {
    runBatch(message);
    reply = { id: message.id };
  } catch (err) {
    const e = err as { message?: string; code?: unknown };
    reply = { id: message.id, error: { message: String(e.message ?? err), code: typeof e.code === 'string' ? e.code : undefined } };
  }
  parentPort!.postMessage(reply);
});
