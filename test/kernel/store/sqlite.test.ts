import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../kernel/store/sqlite.ts';
import { sqliteDriver } from '../../../kernel/store/sqlite-driver.ts';

const Database = sqliteDriver();

const stores: SqliteStore[] = [];
function open(file = join(mkdtempSync(join(tmpdir(), 'svc-store-')), 'svc.db')): { store: SqliteStore; file: string } {
  const store = new SqliteStore(file);
  stores.push(store);
  return { store, file };
}
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => undefined);
});

const TABLE = [{ version: 1, up: 'CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)' }];

describe('SqliteStore', () => {
  it('uses WAL in a real file', async () => {
    const { store, file } = open();
    await store.migrate('test', TABLE);
    await store.run('INSERT INTO t (k, v) VALUES (?, ?)', ['a', 1]);
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(raw.prepare('SELECT v FROM t WHERE k = ?').get('a')).toEqual({ v: 1 });
    raw.close();
  });

  it('applies each owner migration once, in order, and records it', async () => {
    const { store, file } = open();
    await store.migrate('a', [{ version: 2, up: 'ALTER TABLE t ADD COLUMN w TEXT' }, ...TABLE]);
    await store.migrate('a', [...TABLE, { version: 2, up: 'ALTER TABLE t ADD COLUMN w TEXT' }]);
    await store.close();
    const again = open(file).store;
    await again.migrate('a', [...TABLE, { version: 2, up: 'ALTER TABLE t ADD COLUMN w TEXT' }, { version: 3, up: 'CREATE INDEX t_v ON t (v)' }]);
    expect(await again.all('SELECT owner, version FROM svc_migrations ORDER BY version')).toEqual([
      { owner: 'a', version: 1 },
      { owner: 'a', version: 2 },
      { owner: 'a', version: 3 },
    ]);
  });

  it('a failing migration leaves nothing behind and names itself', async () => {
    const { store } = open();
    await expect(store.migrate('b', [{ version: 1, up: 'CREATE TABLE x (a INTEGER); CREATE TABLE x (a INTEGER)' }])).rejects.toThrow(/migration b v1 failed/);
    expect(await store.all("SELECT name FROM sqlite_master WHERE name = 'x'")).toEqual([]);
    expect(await store.all('SELECT * FROM svc_migrations')).toEqual([]);
  });

  it('rolls a transaction back when its function throws', async () => {
    const { store } = open();
    await store.migrate('test', TABLE);
    await expect(
      store.transaction(async (tx) => {
        await tx.run('INSERT INTO t (k, v) VALUES (?, ?)', ['gone', 1]);
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(await store.one('SELECT * FROM t WHERE k = ?', ['gone'])).toBeUndefined();
  });

  it('statements outside a transaction never land inside an open one', async () => {
    const { store } = open();
    await store.migrate('test', TABLE);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tx = store
      .transaction(async (t) => {
        await t.run('INSERT INTO t (k, v) VALUES (?, ?)', ['in-tx', 1]);
        await gate;
        throw new Error('abort');
      })
      .catch(() => undefined);
    const outside = store.run('INSERT INTO t (k, v) VALUES (?, ?)', ['outside', 2]);
    release();
    await Promise.all([tx, outside]);
    expect(await store.all('SELECT k FROM t ORDER BY k')).toEqual([{ k: 'outside' }]);
  });

  it('groups durable transactions of one tick into one commit; a failing job rolls back alone', async () => {
    const { store } = open();
    await store.migrate('test', TABLE);
    const jobs = Array.from({ length: 50 }, (_, i) =>
      store.transaction(async (tx) => {
        await tx.run('INSERT INTO t (k, v) VALUES (?, ?)', [`k${i}`, i]);
        if (i === 7) throw new Error('job 7 fails');
        return i;
      }, { durable: true }),
    );
    const settled = await Promise.allSettled(jobs);
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(49);
    expect(settled[7]).toMatchObject({ status: 'rejected' });
    expect(await store.one<{ n: number }>('SELECT count(*) AS n FROM t')).toEqual({ n: 49 });
    expect(await store.one('SELECT * FROM t WHERE k = ?', ['k7'])).toBeUndefined();
  });

  it('a durable commit is readable from another connection once its promise resolved', async () => {
    const { store, file } = open();
    await store.migrate('test', TABLE);
    await store.transaction(async (tx) => tx.run('INSERT INTO t (k, v) VALUES (?, ?)', ['durable', 1]), { durable: true });
    const raw = new Database(file, { readonly: true });
    expect(raw.prepare('SELECT v FROM t WHERE k = ?').get('durable')).toEqual({ v: 1 });
    raw.close();
  });

  it('a durable transaction resolves after a flush of the WAL; an ordinary one flushes nothing', async () => {
    const { store } = open();
    await store.migrate('test', TABLE);
    const before = store.flushCount;
    await store.transaction(async (tx) => tx.run('INSERT INTO t (k, v) VALUES (?, ?)', ['plain', 1]));
    expect(store.flushCount).toBe(before);
    await store.transaction(async (tx) => tx.run('INSERT INTO t (k, v) VALUES (?, ?)', ['durable', 1]), { durable: true });
    expect(store.flushCount).toBe(before + 1);
  });

  it('sync() runs up to 3 flushes at once; callers past that share one queued flush', async () => {
    const { store } = open();
    await store.migrate('test', TABLE);
    const before = store.flushCount;
    // 3 start at once, the other 7 share the fourth, which starts when one of them ends.
    await Promise.all(Array.from({ length: 10 }, () => store.sync()));
    expect(store.flushCount - before).toBe(4);
    // A caller arriving after every flush ended starts one of its own.
    await store.sync();
    expect(store.flushCount - before).toBe(5);
    const memory = new SqliteStore(':memory:');
    stores.push(memory);
    await memory.sync();
    expect(memory.flushCount).toBe(0);
  });

  it('commits go on while a durable commit waits for its flush', async () => {
    const { store } = open();
    await store.migrate('test', TABLE);
    const order: string[] = [];
    const durable = store.transaction(async (tx) => tx.run('INSERT INTO t (k, v) VALUES (?, ?)', ['durable', 1]), { durable: true }).then(() => order.push('durable'));
    // Queued behind the durable commit; the flush (a thread-pool call) cannot end before it commits.
    const next = new Promise<void>((resolve) => setImmediate(resolve)).then(() => store.transaction(async (tx) => tx.run('INSERT INTO t (k, v) VALUES (?, ?)', ['next', 2]))).then(() => order.push('next'));
    await Promise.all([durable, next]);
    expect(order).toEqual(['next', 'durable']);
  });
});
