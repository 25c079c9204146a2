import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { PgStore } from '../../../../plugins/store/postgres/store.ts';
import { PgNotifications } from '../../../../plugins/store/postgres/notifications.ts';
import { PG_SCHEMA_PREFIX, PG_URL, dropPgSchemas, pgAnswers, pgSchemaUrl } from '../../../helpers/store.ts';
import { terminateBackend } from '../../../helpers/cluster.ts';

/** The LISTEN connection of the PostgreSQL store: its loss, the reconnect, onResync. */
const pgRuns = process.env.CI === 'true' || (await pgAnswers());
if (!pgRuns) console.warn(`PostgreSQL does not answer at ${PG_URL}: the LISTEN reconnect tests are skipped`);
const SUITE = `${PG_SCHEMA_PREFIX}listen_${randomUUID().slice(0, 8)}_`;
afterAll(() => dropPgSchemas(SUITE));

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('PostgreSQL change notifications', () => {
  it.skipIf(!pgRuns)('a store whose LISTEN connection is terminated reconnects, runs onResync, and receives again', async () => {
    const url = await pgSchemaUrl(`${SUITE}a`);
    const a = await PgStore.open(url, { log: pino({ level: 'silent' }) });
    const b = await PgStore.open(url, { log: pino({ level: 'silent' }) });
    try {
      const got: string[] = [];
      let resyncs = 0;
      a.listen('t', (p) => void got.push(p), () => void resyncs++);
      await b.notify('t', 'before');
      await until(() => got.length === 1);
      const pid = a.notifications.backendPid!;
      expect(pid).toBeGreaterThan(0);
      await terminateBackend(pid);
      // Sent while a is not listening: lost, which is what onResync is for.
      await b.notify('t', 'while away');
      await until(() => resyncs === 1);
      expect(a.notifications.connects).toBe(2);
      expect(a.notifications.backendPid).not.toBe(pid);
      await b.notify('t', 'after');
      await until(() => got.includes('after'));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('names a channel per schema within PostgreSQL identifier length', () => {
    expect(PgNotifications.channelOf('public')).toBe('svc_changes:public');
    const long = PgNotifications.channelOf('s'.repeat(80));
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(63);
    expect(long).not.toBe(PgNotifications.channelOf('t'.repeat(80)));
  });
});
