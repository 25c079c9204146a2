import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PgStore } from '../../../../plugins/store/postgres/store.ts';
import { PG_SCHEMA_PREFIX, PG_URL, dropPgSchemas, pgAnswers, pgSchemaUrl } from '../../../helpers/store.ts';
import { terminateBackend } from '../../../helpers/cluster.ts';

/**
 * Pool connections whose server side goes away (an administrator's pg_terminate_backend, a
 * failover, a proxy closing idle sessions): the statement or transaction on it fails, the process
 * does not crash on an unhandled 'error' event, and the next statement gets a working connection.
 */
const pgRuns = process.env.CI === 'true' || (await pgAnswers());
if (!pgRuns) console.warn(`PostgreSQL does not answer at ${PG_URL}: the lost-connection tests are skipped`);
const SUITE = `${PG_SCHEMA_PREFIX}lost_${randomUUID().slice(0, 8)}_`;

let store: PgStore;
const uncaught: unknown[] = [];
const onUncaught = (err: unknown) => void uncaught.push(err);

beforeAll(async () => {
  if (!pgRuns) return;
  store = await PgStore.open(await pgSchemaUrl(`${SUITE}a`), { log: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await store?.close();
  await dropPgSchemas(SUITE);
});
afterEach(() => {
  process.off('uncaughtException', onUncaught);
});

/** Counts what would have crashed svc (an 'error' event nobody listens to is thrown at the top). */
function watchUncaught(): void {
  uncaught.length = 0;
  process.on('uncaughtException', onUncaught);
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function svcBackends(): Promise<number[]> {
  const rows = await store.all<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = 'svc' AND pid <> pg_backend_pid()");
  return rows.map((r) => r.pid);
}

describe.runIf(pgRuns)('PostgreSQL store connections cut by the server', () => {
  it('idle pool connections terminated: a warning each, and the next statements run', async () => {
    watchUncaught();
    // Several connections in the pool, all idle afterwards.
    await Promise.all([1, 2, 3].map(() => store.one('SELECT pg_sleep(0.05)')));
    for (const pid of await svcBackends()) await terminateBackend(pid);
    await store.one('SELECT pg_backend_pid() AS pid');
    await pause(100);
    expect(await store.one('SELECT 1 AS one')).toEqual({ one: 1 });
    expect(await store.transaction((tx) => tx.one('SELECT 2 AS two'))).toEqual({ two: 2 });
    expect(uncaught).toEqual([]);
  });

  it('a transaction whose connection is terminated between two statements fails; nothing crashes; the next transaction runs', async () => {
    watchUncaught();
    const outcome = store.transaction(async (tx) => {
      const { pid } = (await tx.one<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!;
      await terminateBackend(pid);
      // The connection's end arrives while no statement of it is running.
      await pause(200);
      return tx.one('SELECT 1 AS one');
    });
    // The server's reason, not pg's "not queryable".
    await expect(outcome).rejects.toThrow(/terminating connection due to administrator command/);
    expect(uncaught).toEqual([]);
    expect(await store.transaction((tx) => tx.one('SELECT 3 AS three'))).toEqual({ three: 3 });
  });

  it('a transaction whose connection is terminated during a statement fails with the server’s reason; nothing crashes', async () => {
    watchUncaught();
    const outcome = store.transaction(async (tx) => {
      const { pid } = (await tx.one<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!;
      setTimeout(() => void terminateBackend(pid), 100);
      return tx.one('SELECT pg_sleep(2)');
    });
    await expect(outcome).rejects.toThrow(/terminating connection/);
    await pause(200);
    expect(uncaught).toEqual([]);
    expect(await store.transaction((tx) => tx.one('SELECT 4 AS four'))).toEqual({ four: 4 });
  });
});
