import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../kernel/store/sqlite.ts';

/** The SQLite store's writer thread (kernel/store/sqlite-writer.ts), through writeBatch. */
const stores: SqliteStore[] = [];
function open(file = join(mkdtempSync(join(tmpdir(), 'svc-writer-')), 'svc.db')): SqliteStore {
  const store = new SqliteStore(file);
  stores.push(store);
  return store;
}
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => undefined);
});

const TABLES = [
  {
    version: 1,
    up: `CREATE TABLE parent (id INTEGER PRIMARY KEY);
         CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL, parent INTEGER REFERENCES parent (id));
         CREATE TABLE n (x INTEGER NOT NULL)`,
  },
];
const INSERT = 'INSERT INTO t (k, v) VALUES (?, ?)';
/** A batch that keeps SQLite busy for a while: about a million rows from a recursive query. */
const SLOW = 'INSERT INTO n WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT x FROM c';

/** The store's thread, for the one test that stops it from outside. */
function writerWorker(store: SqliteStore): Worker | undefined {
  return (store as unknown as { writer: { thread?: { worker: Worker } } }).writer.thread?.worker;
}

async function ticksDuring(work: () => Promise<unknown>): Promise<number> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 2);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return ticks;
}

describe('SqliteStore writer thread', () => {
  it('runs a batch in order in one transaction; the store reads it once it resolved', async () => {
    const store = open();
    await store.migrate('test', TABLES);
    await store.writeBatch([
      [INSERT, ['a', 1]],
      ['UPDATE t SET v = v + 10 WHERE k = ?', ['a']],
      [INSERT, ['b', 2]],
    ]);
    expect(await store.all('SELECT k, v FROM t ORDER BY k')).toEqual([
      { k: 'a', v: 11 },
      { k: 'b', v: 2 },
    ]);
  });

  it('leaves the event loop free while a batch runs, where the in-memory store blocks it', async () => {
    const store = open();
    await store.migrate('test', TABLES);
    const memory = new SqliteStore(':memory:');
    stores.push(memory);
    await memory.migrate('test', TABLES);
    await store.writeBatch([[INSERT, ['warm', 0]]]);
    const onThread = await ticksDuring(() => store.writeBatch([[SLOW, [1_000_000]]]));
    const inLoop = await ticksDuring(() => memory.writeBatch([[SLOW, [1_000_000]]]));
    expect(await store.one('SELECT COUNT(*) AS n FROM n')).toEqual({ n: 1_000_000 });
    expect(await memory.one('SELECT COUNT(*) AS n FROM n')).toEqual({ n: 1_000_000 });
    expect(onThread).toBeGreaterThanOrEqual(5);
    expect(inLoop).toBeLessThanOrEqual(1);
  });

  it('a failing statement rolls the whole batch back and keeps its code; the next batch runs', async () => {
    const store = open();
    await store.migrate('test', TABLES);
    await store.writeBatch([[INSERT, ['a', 1]]]);
    const failed = store.writeBatch([
      [INSERT, ['b', 2]],
      [INSERT, ['a', 3]],
    ]);
    await expect(failed).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY', message: expect.stringContaining('UNIQUE') });
    // The thread's connection checks foreign keys, as the store's does.
    await expect(store.writeBatch([['INSERT INTO t (k, v, parent) VALUES (?, ?, ?)', ['c', 3, 42]]])).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_FOREIGNKEY' });
    await store.writeBatch([[INSERT, ['d', 4]]]);
    expect(await store.all('SELECT k FROM t ORDER BY k')).toEqual([{ k: 'a' }, { k: 'd' }]);
  });

  it('a text that does not prepare fails each batch using it, and only those', async () => {
    const store = open();
    await store.migrate('test', TABLES);
    await expect(store.writeBatch([['INSERT INTO nowhere (k) VALUES (?)', ['a']]])).rejects.toThrow(/no such table: nowhere/);
    await expect(store.writeBatch([[INSERT, ['a', 1]], ['INSERT INTO nowhere (k) VALUES (?)', ['a']]])).rejects.toThrow(/no such table/);
    await store.writeBatch([[INSERT, ['b', 2]]]);
    expect(await store.all('SELECT k FROM t')).toEqual([{ k: 'b' }]);
  });

  it("batches and the store's own statements never overlap: no busy error, each sees the one before", async () => {
    const store = open();
    await store.migrate('test', TABLES);
    const work: Array<Promise<unknown>> = [];
    for (let i = 0; i < 50; i++) {
      work.push(store.writeBatch([[INSERT, [`w${i}`, i]]]));
      work.push(store.transaction(async (tx) => tx.run(INSERT, [`t${i}`, i])));
      work.push(store.one('SELECT COUNT(*) AS n FROM t'));
    }
    const results = await Promise.all(work);
    // The count read after the i-th pair of writes sees exactly those.
    for (let i = 0; i < 50; i++) expect(results[i * 3 + 2]).toEqual({ n: 2 * (i + 1) });
  });

  it('a batch then sync() is on disk, readable from another connection', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-writer-')), 'svc.db');
    const store = open(file);
    await store.migrate('test', TABLES);
    const before = store.flushCount;
    await store.writeBatch([[INSERT, ['durable', 1]]]);
    await store.sync();
    expect(store.flushCount).toBe(before + 1);
    const other = open(file);
    expect(await other.one('SELECT v FROM t WHERE k = ?', ['durable'])).toEqual({ v: 1 });
  });

  it('starts its thread on the first batch; a stopped thread fails the batch in flight and the next batch starts another', async () => {
    const store = open();
    await store.migrate('test', TABLES);
    expect(writerWorker(store)).toBeUndefined();
    await store.writeBatch([[INSERT, ['a', 1]]]);
    const first = writerWorker(store)!;
    expect(first).toBeDefined();
    const inFlight = store.writeBatch([[SLOW, [3_000_000]]]);
    await first.terminate();
    await expect(inFlight).rejects.toThrow(/writer thread/);
    await store.writeBatch([[INSERT, ['b', 2]]]);
    expect(writerWorker(store)).not.toBe(first);
    expect(await store.all('SELECT k FROM t ORDER BY k')).toEqual([{ k: 'a' }, { k: 'b' }]);
  });

  it('close() ends the thread', async () => {
    const store = open();
    await store.migrate('test', TABLES);
    await store.writeBatch([[INSERT, ['a', 1]]]);
    const worker = writerWorker(store)!;
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    await store.close();
    expect(await exited).toBe(0);
  });
});
