import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { openTestStore } from '../../../helpers/store.ts';
import { CoalescedInserts, InsertShapes } from '../../../../plugins/pubsub/engine/coalesced-inserts.ts';
import { GroupCommitter } from '../../../../plugins/pubsub/engine/group-commit.ts';
import type { DataStore, Queryable, RunResult } from '../../../../sdk/plugin/store.ts';

const INSERT_ITEM = 'INSERT INTO t_item (id, name, qty) VALUES (?, ?, 0)';
const INSERT_TAG = 'INSERT INTO t_tag (id, tag) VALUES (?, ?)';
const SHAPES = new InsertShapes([INSERT_ITEM, INSERT_TAG]);

let store: DataStore;
beforeEach(async () => {
  store = await openTestStore();
  await store.migrate('coalesce-test', [{ version: 1, up: 'CREATE TABLE t_item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL); CREATE TABLE t_tag (id INTEGER NOT NULL, tag TEXT NOT NULL)' }]);
});
afterEach(async () => {
  await store.close();
});

/** The transaction's statements as the store receives them (the real store runs each one). */
function recording(tx: Queryable, sent: Array<{ sql: string; params: readonly unknown[] }>): Queryable {
  return {
    all: (sql, params) => tx.all(sql, params),
    one: (sql, params) => tx.one(sql, params),
    run: (sql: string, params: readonly unknown[] = []): Promise<RunResult> => {
      sent.push({ sql, params });
      return tx.run(sql, params);
    },
  };
}

async function items(): Promise<Array<{ id: number; name: string; qty: number }>> {
  return (await store.all<{ id: number; name: string; qty: number }>('SELECT id, name, qty FROM t_item ORDER BY id')).map((r) => ({ id: Number(r.id), name: r.name, qty: Number(r.qty) }));
}

describe('coalesced inserts', () => {
  it('sends held rows at flush as multi-row statements of 32, 16, … rows, every value in place', async () => {
    const sent: Array<{ sql: string; params: readonly unknown[] }> = [];
    await store.transaction(async (tx) => {
      const inserts = new CoalescedInserts(recording(tx, sent), SHAPES);
      for (let id = 1; id <= 50; id++) {
        expect(await inserts.run(INSERT_ITEM, [id, `item ${id}`])).toEqual({ changes: 1 });
        await inserts.run(INSERT_TAG, [id, `tag ${id}`]);
      }
      expect(sent).toEqual([]);
      await inserts.flush();
    });
    const rowsPerStatement = sent.map((s) => ({ table: s.sql.slice(12, 17), rows: s.sql.split('),').length, params: s.params.length }));
    expect(rowsPerStatement).toEqual([
      { table: 't_ite', rows: 32, params: 64 },
      { table: 't_ite', rows: 16, params: 32 },
      { table: 't_ite', rows: 2, params: 4 },
      { table: 't_tag', rows: 32, params: 64 },
      { table: 't_tag', rows: 16, params: 32 },
      { table: 't_tag', rows: 2, params: 4 },
    ]);
    expect(await items()).toEqual(Array.from({ length: 50 }, (_, i) => ({ id: i + 1, name: `item ${i + 1}`, qty: 0 })));
    const tags = await store.all<{ id: number; tag: string }>('SELECT id, tag FROM t_tag ORDER BY id');
    expect(tags.map((t) => `${Number(t.id)}:${t.tag}`)).toEqual(Array.from({ length: 50 }, (_, i) => `${i + 1}:tag ${i + 1}`));
  });

  it('sends held rows before any other statement, so updates and reads in the same transaction see them', async () => {
    let seen: number | undefined;
    await store.transaction(async (tx) => {
      const inserts = new CoalescedInserts(tx, SHAPES);
      await inserts.run(INSERT_ITEM, [1, 'a']);
      await inserts.run(INSERT_ITEM, [2, 'b']);
      await inserts.run('UPDATE t_item SET qty = 7 WHERE id = ?', [2]);
      await inserts.run(INSERT_ITEM, [3, 'c']);
      seen = Number((await inserts.one<{ n: number }>('SELECT COUNT(*) AS n FROM t_item'))?.n);
      await inserts.run('DELETE FROM t_item WHERE id = ?', [1]);
      await inserts.flush();
    });
    expect(seen).toBe(3);
    expect(await items()).toEqual([
      { id: 2, name: 'b', qty: 7 },
      { id: 3, name: 'c', qty: 0 },
    ]);
  });

  it('refuses a statement that is not a single-row INSERT', () => {
    expect(() => new InsertShapes(['UPDATE t_item SET qty = 1'])).toThrow(/not a single-row INSERT/);
    expect(() => new InsertShapes(['INSERT INTO t_item (id) SELECT 1'])).toThrow(/not a single-row INSERT/);
  });
});

describe('group commit with coalesced inserts', () => {
  it('a row that fails its multi-row statement fails only its own write: the neighbours commit', async () => {
    await store.run('INSERT INTO t_item (id, name, qty) VALUES (?, ?, 0)', [5, 'there before']);
    const writer = new GroupCommitter(store, pino({ level: 'silent' }), SHAPES);
    const results = await Promise.allSettled(
      [3, 4, 5, 6, 7].map((id) => writer.write((tx) => tx.run(INSERT_ITEM, [id, `new ${id}`]).then(() => undefined), true)),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(await items()).toEqual([
      { id: 3, name: 'new 3', qty: 0 },
      { id: 4, name: 'new 4', qty: 0 },
      { id: 5, name: 'there before', qty: 0 },
      { id: 6, name: 'new 6', qty: 0 },
      { id: 7, name: 'new 7', qty: 0 },
    ]);
  });
});
