import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../kernel/store/sqlite.ts';
import { PgStore } from '../../../plugins/store/postgres/store.ts';
import { isUniqueViolation, sqlTypes, type DataStore } from '../../../sdk/plugin/store.ts';
import { PG_SCHEMA_PREFIX, PG_URL, dropPgSchemas, pgAnswers, pgSchemaUrl } from '../../helpers/store.ts';

/**
 * The store contract (sdk/plugin/store.ts), one suite for every strategy: the embedded SQLite
 * file and PostgreSQL. With CI=true the PostgreSQL half always runs (and fails when PostgreSQL
 * is down); elsewhere it is skipped, saying so, when PostgreSQL does not answer.
 */
const pgUp = await pgAnswers();
const pgRuns = pgUp || process.env.CI === 'true';
if (!pgRuns) console.warn(`PostgreSQL does not answer at ${PG_URL}: the store contract runs on SQLite only`);

/** Opens "the same database" again for a place name: a file, or a schema named after it. */
type Opener = (place: string) => Promise<DataStore>;
const SUITE = `${PG_SCHEMA_PREFIX}contract_${randomUUID().slice(0, 8)}_`;

const strategies: Array<{ name: string; skip: boolean; open: Opener }> = [
  { name: 'sqlite', skip: false, open: async (place) => new SqliteStore(join(place, 'svc.db')) },
  { name: 'postgres', skip: !pgRuns, open: async (place) => PgStore.open(await pgSchemaUrl(SUITE + place), { log: pino({ level: 'silent' }) }) },
];

afterAll(() => dropPgSchemas(SUITE));

describe.each(strategies)('the $name store', ({ skip, open: openAt }) => {
  const opened: DataStore[] = [];
  const places: string[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close().catch(() => undefined);
  });
  function newPlace(): string {
    const place = mkdtempSync(join(tmpdir(), 'svc-contract-'));
    places.push(place);
    return place;
  }
  async function open(place = newPlace()): Promise<DataStore> {
    const store = await openAt(place);
    opened.push(store);
    return store;
  }
  const table = (store: DataStore) => [{ version: 1, up: `CREATE TABLE t (k TEXT PRIMARY KEY, v ${sqlTypes(store.dialect).int} NOT NULL)` }];

  it.skipIf(skip)('applies each owner migration once, in order, and records it', async () => {
    const place = newPlace();
    const store = await open(place);
    const v2 = { version: 2, up: 'ALTER TABLE t ADD COLUMN w TEXT' };
    await store.migrate('a', [v2, ...table(store)]);
    await store.migrate('a', [...table(store), v2]);
    await store.close();
    const again = await open(place);
    await again.migrate('a', [...table(again), v2, { version: 3, up: 'CREATE INDEX t_v ON t (v)' }]);
    expect(await again.all("SELECT owner, version FROM svc_migrations WHERE owner = 'a' ORDER BY version")).toEqual([
      { owner: 'a', version: 1 },
      { owner: 'a', version: 2 },
      { owner: 'a', version: 3 },
    ]);
  });

  it.skipIf(skip)('a failing migration leaves nothing behind and names itself', async () => {
    const store = await open();
    await expect(store.migrate('b', [{ version: 1, up: 'CREATE TABLE x (a INTEGER); CREATE TABLE x (a INTEGER)' }])).rejects.toThrow(/migration b v1 failed/);
    await expect(store.all('SELECT a FROM x')).rejects.toThrow();
    expect(await store.all('SELECT * FROM svc_migrations')).toEqual([]);
  });

  it.skipIf(skip)('two processes migrating one database together apply each version once', async () => {
    const place = newPlace();
    const [one, two] = [await open(place), await open(place)];
    const migrations = [...table(one), { version: 2, up: 'CREATE TABLE u (n INTEGER)' }];
    await Promise.all([one.migrate('c', migrations), two.migrate('c', migrations)]);
    expect(await one.all("SELECT version FROM svc_migrations WHERE owner = 'c' ORDER BY version")).toEqual([{ version: 1 }, { version: 2 }]);
  });

  it.skipIf(skip)('binds ? placeholders in order, leaves a ? in a literal alone, and counts changes', async () => {
    const store = await open();
    await store.migrate('t', table(store));
    expect(await store.run('INSERT INTO t (k, v) VALUES (?, ?)', ['a', 1])).toEqual({ changes: 1 });
    await store.run('INSERT INTO t (k, v) VALUES (?, ?)', ['b?', 2]);
    expect(await store.one("SELECT k, v, '?' AS q FROM t WHERE k = ? AND v = ?", ['b?', 2])).toEqual({ k: 'b?', v: 2, q: '?' });
    expect(await store.run('UPDATE t SET v = v + ? WHERE v > ?', [10, 0])).toEqual({ changes: 2 });
    expect(await store.one('SELECT k FROM t WHERE k = ?', ['none'])).toBeUndefined();
    expect(await store.all('SELECT k, v FROM t ORDER BY k')).toEqual([{ k: 'a', v: 11 }, { k: 'b?', v: 12 }]);
  });

  it.skipIf(skip)('reads values back alike: 64-bit integers and counts as numbers, truth as 1/0, blobs as Buffers, reals, nulls', async () => {
    const store = await open();
    const t = sqlTypes(store.dialect);
    await store.migrate('v', [{ version: 1, up: `CREATE TABLE v (id ${t.autoId}, at ${t.int} NOT NULL, flag INTEGER NOT NULL, bytes ${t.blob}, ratio ${t.real}, note TEXT)` }]);
    const at = Date.UTC(2100, 0, 1);
    await store.run('INSERT INTO v (at, flag, bytes, ratio, note) VALUES (?, ?, ?, ?, ?)', [at, 1, Buffer.from([0, 1, 255]), 0.25, null]);
    await store.run('INSERT INTO v (at, flag, bytes, ratio, note) VALUES (?, ?, ?, ?, ?)', [at + 1, 0, null, 1.5, 'x']);
    expect(await store.all('SELECT id, at, flag, bytes, ratio, note FROM v ORDER BY id')).toEqual([
      { id: 1, at, flag: 1, bytes: Buffer.from([0, 1, 255]), ratio: 0.25, note: null },
      { id: 2, at: at + 1, flag: 0, bytes: null, ratio: 1.5, note: 'x' },
    ]);
    expect(await store.one('SELECT COUNT(*) AS n, MAX(at) AS m, MAX(at) > ? AS later FROM v', [at])).toEqual({ n: 2, m: at + 1, later: 1 });
  });

  it.skipIf(skip)('rolls a transaction back when its function throws; statements outside never land inside it', async () => {
    const store = await open();
    await store.migrate('t', table(store));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tx = store
      .transaction(async (q) => {
        await q.run('INSERT INTO t (k, v) VALUES (?, ?)', ['in-tx', 1]);
        await gate;
        throw new Error('abort');
      })
      .catch((err: Error) => err.message);
    const outside = store.run('INSERT INTO t (k, v) VALUES (?, ?)', ['outside', 2]);
    release();
    expect((await Promise.all([tx, outside]))[0]).toBe('abort');
    expect(await store.all('SELECT k FROM t ORDER BY k')).toEqual([{ k: 'outside' }]);
  });

  it.skipIf(skip)('commits concurrent durable transactions; a failing one rolls back alone; sync() resolves', async () => {
    const store = await open();
    await store.migrate('t', table(store));
    const jobs = Array.from({ length: 30 }, (_, i) =>
      store.transaction(
        async (tx) => {
          await tx.run('INSERT INTO t (k, v) VALUES (?, ?)', [`k${i}`, i]);
          if (i === 7) throw new Error('job 7 fails');
          return i;
        },
        { durable: true },
      ),
    );
    const settled = await Promise.allSettled(jobs);
    expect(settled.filter((s) => s.status === 'fulfilled').map((s) => (s as PromiseFulfilledResult<number>).value)).toHaveLength(29);
    expect(settled[7]).toMatchObject({ status: 'rejected' });
    await store.sync();
    expect(await store.one('SELECT COUNT(*) AS n FROM t')).toEqual({ n: 29 });
  });

  it.skipIf(skip)('a durable commit is visible to another process on the same database once it resolved', async () => {
    const place = newPlace();
    const store = await open(place);
    await store.migrate('t', table(store));
    await store.transaction((tx) => tx.run('INSERT INTO t (k, v) VALUES (?, ?)', ['durable', 1]), { durable: true });
    const other = await open(place);
    expect(await other.one('SELECT v FROM t WHERE k = ?', ['durable'])).toEqual({ v: 1 });
  });

  it.skipIf(skip)('reports a unique violation the same way, and it fails the transaction it happened in', async () => {
    const store = await open();
    await store.migrate('t', table(store));
    await store.run('INSERT INTO t (k, v) VALUES (?, ?)', ['a', 1]);
    const outside = await store.run('INSERT INTO t (k, v) VALUES (?, ?)', ['a', 2]).catch((err: unknown) => err);
    expect(isUniqueViolation(outside)).toBe(true);
    const inside = await store
      .transaction(async (tx) => {
        await tx.run('INSERT INTO t (k, v) VALUES (?, ?)', ['b', 1]);
        await tx.run('INSERT INTO t (k, v) VALUES (?, ?)', ['a', 3]);
      })
      .catch((err: unknown) => err);
    expect(isUniqueViolation(inside)).toBe(true);
    expect(isUniqueViolation(new Error('other'))).toBe(false);
    expect(await store.all('SELECT k, v FROM t ORDER BY k')).toEqual([{ k: 'a', v: 1 }]);
  });

  it.skipIf(skip)('upserts with ON CONFLICT ... DO UPDATE (excluded) and DO NOTHING', async () => {
    const store = await open();
    await store.migrate('t', table(store));
    const upsert = 'INSERT INTO t (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v';
    await store.run(upsert, ['a', 1]);
    expect(await store.run(upsert, ['a', 2])).toEqual({ changes: 1 });
    expect(await store.run('INSERT INTO t (k, v) VALUES (?, ?) ON CONFLICT (k) DO NOTHING', ['a', 3])).toEqual({ changes: 0 });
    expect(await store.all('SELECT k, v FROM t')).toEqual([{ k: 'a', v: 2 }]);
  });

  it.skipIf(skip)('closing twice is harmless', async () => {
    const store = await open();
    await expect(store.close()).resolves.toBeUndefined();
    await expect(store.close()).resolves.toBeUndefined();
    // Closed it stays: the second close neither threw nor brought it back.
    await expect(store.all('SELECT 1 AS one')).rejects.toThrow();
  });
});
