import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WAL_BOUND_PAGES } from '../../../kernel/store/checkpointer.ts';
import { SqliteStore, type SqliteStoreOptions } from '../../../kernel/store/sqlite.ts';
import { waitFor } from '../../helpers/wait.ts';

/**
 * WAL checkpoints run in a thread of their own (kernel/store/checkpointer.ts): the store's
 * connection copies the WAL into the database file only when the WAL reaches its bound, the
 * thread does the rest, and the WAL starts over once copied.
 */
const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function open(options: SqliteStoreOptions = {}): Promise<{ store: SqliteStore; file: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-checkpoint-'));
  dirs.push(dir);
  const file = join(dir, 'svc.db');
  const store = new SqliteStore(file, { checkpointerAfterMs: 0, ...options });
  stores.push(store);
  await store.run('CREATE TABLE blob_rows (id INTEGER PRIMARY KEY, data BLOB NOT NULL)');
  return { store, file };
}

const autocheckpoint = async (store: SqliteStore) => (await store.one<{ wal_autocheckpoint: number }>('PRAGMA wal_autocheckpoint'))!.wal_autocheckpoint;

/** About `mb` MB of rows in transactions of 1 MB, one after another with no pause. */
async function write(store: SqliteStore, mb: number, onEach: () => void = () => {}): Promise<void> {
  const row = Buffer.alloc(64 * 1024, 7);
  for (let t = 0; t < mb; t++) {
    await store.transaction(async (tx) => {
      for (let i = 0; i < 16; i++) await tx.run('INSERT INTO blob_rows (data) VALUES (?)', [row]);
    });
    onEach();
  }
}

const size = (path: string) => statSync(path).size;

describe('WAL checkpoints off the event loop', () => {
  it("the thread copies the WAL into the database file; the store's connection checkpoints only at the bound", async () => {
    const { store, file } = await open();
    await waitFor('the checkpoint thread to start', async () => (await autocheckpoint(store)) === WAL_BOUND_PAGES);
    // 12 MB: 3,000 pages, past SQLite's usual 1,000 and below the bound of 10,000. Only the
    // thread can have grown the database file past its first pages.
    await write(store, 12);
    await waitFor('the checkpoint thread to copy the WAL into the database', () => size(file) > 12 << 20);
  });

  it('the WAL stays within its bound under writes that never pause, whether or not the thread keeps up', async () => {
    // A thread that never gets to run stands for one that never catches up: the bound alone holds the WAL.
    for (const checkpointerTiming of [undefined, { busyMs: 60_000, idleMs: 60_000 }]) {
      const { store, file } = await open({ walBoundPages: 1000, checkpointerTiming });
      await waitFor('the checkpoint thread to start', async () => (await autocheckpoint(store)) === 1000);
      let largest = 0;
      await write(store, 40, () => (largest = Math.max(largest, size(`${file}-wal`))));
      // 1,000 pages of 4 KB, and the transaction of 1 MB that crossed them.
      expect(largest).toBeLessThan(6 << 20);
      expect(size(file)).toBeGreaterThan(30 << 20);
    }
  });

  it('the WAL starts over once copied: writing as much again does not grow it', async () => {
    const { store, file } = await open();
    await write(store, 8);
    // Complete: the database file holds every page the store's connection sees.
    const pages = (await store.one<{ page_count: number }>('PRAGMA page_count'))!.page_count;
    const pageSize = (await store.one<{ page_size: number }>('PRAGMA page_size'))!.page_size;
    await waitFor('the first checkpoint, complete', () => size(file) >= pages * pageSize);
    // Rewound: a small write lands at the WAL's start and leaves the file as long as it was (the
    // checkpoint marks its work done a moment after it wrote the last page; until then it appends).
    let before = 0;
    await waitFor('a write that rewinds the WAL', async () => {
      before = size(`${file}-wal`);
      await store.run('INSERT INTO blob_rows (data) VALUES (?)', [Buffer.alloc(10)]);
      return size(`${file}-wal`) === before;
    });
    await write(store, 8);
    // A WAL never copied would have doubled.
    expect(size(`${file}-wal`)).toBeLessThanOrEqual(before + (2 << 20));
    await waitFor('the second checkpoint', () => size(file) > 16 << 20);
  });

  it('a store reads and writes as before, and closes with its thread', async () => {
    const { store } = await open();
    await write(store, 1);
    expect((await store.one<{ n: number }>('SELECT COUNT(*) AS n FROM blob_rows'))!.n).toBe(16);
    await store.close();
    stores.splice(stores.indexOf(store), 1);
  });
});
