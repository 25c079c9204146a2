import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../kernel/store/sqlite.ts';
import { PgStore } from '../../../plugins/store/postgres/store.ts';
import type { DataStore } from '../../../sdk/plugin/store.ts';
import { PG_SCHEMA_PREFIX, PG_URL, dropPgSchemas, pgAnswers, pgSchemaUrl } from '../../helpers/store.ts';

/**
 * Change notifications of the store contract (DataStore.notify/listen) on every strategy: two
 * stores on one database stand for two nodes. CI=true always runs the PostgreSQL half.
 */
const pgRuns = process.env.CI === 'true' || (await pgAnswers());
if (!pgRuns) console.warn(`PostgreSQL does not answer at ${PG_URL}: store notifications are tested on SQLite only`);
const SUITE = `${PG_SCHEMA_PREFIX}notify_${randomUUID().slice(0, 8)}_`;
afterAll(() => dropPgSchemas(SUITE));

const strategies = [
  { name: 'sqlite', skip: false, open: async (place: string): Promise<DataStore> => new SqliteStore(join(place, 'svc.db')) },
  { name: 'postgres', skip: !pgRuns, open: async (place: string): Promise<DataStore> => PgStore.open(await pgSchemaUrl(SUITE + place), { log: pino({ level: 'silent' }) }) },
];

async function until(check: () => boolean, ms = 2_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.each(strategies)('notifications of the $name store', ({ skip, open: openAt }) => {
  const opened: DataStore[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close().catch(() => undefined);
  });
  async function pair(): Promise<[DataStore, DataStore]> {
    const place = mkdtempSync(join(tmpdir(), 'svc-notify-'));
    const a = await openAt(place);
    const b = await openAt(place);
    opened.push(a, b);
    return [a, b];
  }

  it.skipIf(skip)('reach the other store of the database in order, by topic, and not the sender', async () => {
    const [a, b] = await pair();
    const atA: string[] = [];
    const atB: string[] = [];
    a.listen('t', (p) => void atA.push(p));
    b.listen('t', (p) => void atB.push(p));
    b.listen('other', (p) => void atB.push(`other:${p}`));
    await a.notify('t', '1');
    await a.notify('t', '2');
    await a.notify('other');
    await until(() => atB.length === 3);
    expect(atB).toEqual(['1', '2', 'other:']);
    await b.notify('t', 'from b');
    await until(() => atA.length === 1);
    expect(atA).toEqual(['from b']);
    expect(atB).toHaveLength(3);
  });

  it.skipIf(skip)('stops after unsubscribe; a failing listener does not stop the others', async () => {
    const [a, b] = await pair();
    const got: string[] = [];
    b.listen('t', () => {
      throw new Error('listener bug');
    });
    b.listen('t', async () => Promise.reject(new Error('async listener bug')));
    const off = b.listen('t', (p) => void got.push(p));
    await a.notify('t', 'x');
    await until(() => got.length === 1);
    off();
    await a.notify('t', 'y');
    await new Promise((r) => setTimeout(r, 200));
    expect(got).toEqual(['x']);
  });

  it.skipIf(skip)('refuses payloads too large for PostgreSQL', async () => {
    const [a] = await pair();
    await expect(a.notify('t', 'x'.repeat(8000))).rejects.toThrow(/too large/);
  });
});
