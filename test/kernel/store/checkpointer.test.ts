import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CHECKPOINTER_AFTER_MS, SqliteStore } from '../../../kernel/store/sqlite.ts';
import { waitFor } from '../../helpers/wait.ts';

/**
 * WAL checkpoints run in a thread of their own (kernel/store/checkpointer.ts): the store's
 * connection never copies the WAL into the database file itself, a thread does, and the WAL
 * starts over once copied.
 */
const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function open(): Promise<{ store: SqliteStore; file: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-checkpoint-'));
  dirs.push(dir);
  const file = join(dir, 'svc.db');
  const store = new SqliteStore(file);
  stores.push(store);
  await store.run('CREATE TABLE blob_rows (id INTEGER PRIMARY KEY, data BLOB NOT NULL)');
  return { store, file };
}

const autocheckpoint = async (store: SqliteStore) => (await store.one<{ wal_autocheckpoint: number }>('PRAGMA wal_autocheckpoint'))!.wal_autocheckpoint;

/** Once the store has been open CHECKPOINTER_AFTER_MS its checkpoints leave its connection. */
async function threadStarted(store: SqliteStore): Promise<void> {
  await waitFor('the checkpoint thread to start', async () => (await autocheckpoint(store)) === 0);
}

/** About `mb` MB of rows in transactions of 1 MB: far past the 1,000 pages (4 MB) of an automatic checkpoint. */
async function write(store: SqliteStore, mb: number): Promise<void> {
  const row = Buffer.alloc(64 * 1024, 7);
  for (let t = 0; t < mb; t++) {
    await store.transaction(async (tx) => {
      for (let i = 0; i < 16; i++) await tx.run('INSERT INTO blob_rows (data) VALUES (?)', [row]);
    });
  }
}

const size = (path: string) => statSync(path).size;

describe('WAL checkpoints off the event loop', () => {
  it("the store's own connection does not checkpoint (wal_autocheckpoint 0); the thread copies the WAL into the database file", async () => {
    const { store, file } = await open();
    await threadStarted(store);
    await write(store, 12);
    // Without the thread nothing would ever grow the database file past its first pages.
    await waitFor('the checkpoint thread to copy the WAL into the database', () => size(file) > 12 << 20);
  });

  it('the WAL starts over once copied: writing as much again does not grow it', async () => {
    const { store, file } = await open();
    await threadStarted(store);
    await write(store, 8);
    // Complete: the database file holds every page the store's connection sees.
    const pages = (await store.one<{ page_count: number }>('PRAGMA page_count'))!.page_count;
    const pageSize = (await store.one<{ page_size: number }>('PRAGMA page_size'))!.page_size;
    await waitFor('the first checkpoint, complete', () => size(file) >= pages * pageSize);
    const wal = size(`${file}-wal`);
    expect(wal).toBeGreaterThan(8 << 20);
    // Rewound: a small write lands at the WAL's start and leaves the file as long as it was (the
    // checkpoint marks its work done a moment after it wrote the last page; until then it appends).
    await waitFor('a write that rewinds the WAL', async () => {
      await store.run('INSERT INTO blob_rows (data) VALUES (?)', [Buffer.alloc(10)]);
      return size(`${file}-wal`) === wal;
    });
    // Written from the start of the file again: a WAL never copied would double.
    await write(store, 8);
    expect(size(`${file}-wal`)).toBeLessThanOrEqual(wal + (2 << 20));
    await waitFor('the second checkpoint', () => size(file) > 16 << 20);
  });

  it('a store closed within CHECKPOINTER_AFTER_MS (a one-shot command) never starts the thread; until then SQLite checkpoints itself', async () => {
    const { store } = await open();
    expect(await autocheckpoint(store)).toBe(1000);
    await store.close();
    stores.splice(stores.indexOf(store), 1);
    await new Promise((r) => setTimeout(r, CHECKPOINTER_AFTER_MS + 200));
  });

  it('a store reads and writes as before, and closes with its thread', async () => {
    const { store } = await open();
    await write(store, 1);
    expect((await store.one<{ n: number }>('SELECT COUNT(*) AS n FROM blob_rows'))!.n).toBe(16);
    await store.close();
    stores.splice(stores.indexOf(store), 1);
  });
});
