import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Suites that run a second time on PostgreSQL (the `postgres` project): together they apply every
 * plugin's migrations and run every plugin's SQL statements there. The store contract suite
 * (test/kernel/store/contract.test.ts) covers both stores in the default project.
 */
const POSTGRES_SUITES = [
  'test/plugins/pubsub/engine/engine.test.ts',
  'test/plugins/pubsub/engine/control.test.ts',
  'test/plugins/pubsub/engine/coalesced-inserts.test.ts',
  'test/plugins/pubsub/crash.test.ts',
  'test/plugins/pubsub/http/tenants.test.ts',
  'test/plugins/delivery/use-queue/accept.test.ts',
  'test/plugins/delivery/use-queue/control.test.ts',
  'test/plugins/delivery/use-queue/restart.test.ts',
  'test/plugins/delivery/use-queue/retries.test.ts',
  'test/plugins/admin/api/auth.test.ts',
  'test/plugins/admin/api/accounts.test.ts',
  'test/plugins/admin/api/tenants.test.ts',
  'test/plugins/admin/api/store.test.ts',
  'test/plugins/admin/api/persistence.test.ts',
  'test/plugins/admin/api/resources.test.ts',
  'test/plugins/secrets/shared/vault.test.ts',
  'test/plugins/secrets/named/secret-store.test.ts',
  'test/plugins/secrets/named/restart.test.ts',
  'test/plugins/security/shared/secret-manager.test.ts',
  'test/plugins/observe/health/health.test.ts',
  'test/plugins/connectors/file-pickup/local.test.ts',
];

/**
 * Suites that load both cores for minutes and count what happens on time (three nodes running
 * 200 jobs a second): they run alone, after the rest (the `solo` project), so neither they nor the
 * suites beside them are measured against each other's load.
 */
const SOLO_SUITES = ['test/plugins/scheduler/cluster.test.ts'];

const PG_URL = process.env.SVC_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function pgAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 1_000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export default defineConfig(async () => {
  // Names this run's PostgreSQL schemas (test/helpers/store.ts), so its global teardown drops its own only.
  process.env.SVC_TEST_RUN ??= `${process.pid.toString(36)}${Date.now().toString(36)}`;
  // On CI the PostgreSQL suites always run (and fail if it is down); elsewhere they need it up.
  const withPostgres = process.env.CI === 'true' || (await pgAnswers());
  if (!withPostgres) process.stderr.write(`PostgreSQL does not answer at ${PG_URL}: the postgres project (store suites on PostgreSQL) is skipped\n`);
  return {
    resolve: {
      // What kernel/plugin-sdk-resolve.ts does under `svc start`: vitest resolves imports of the
      // files it runs itself, past Node's resolve hooks, so third-party plugins get the same SDK here.
      alias: [{ find: /^svc\/sdk\/plugin$/, replacement: fileURLToPath(new URL('./sdk/plugin/index.ts', import.meta.url)) }],
    },
    test: {
      // Some suites load isolated-vm in the test process itself, which needs this on every Node line.
      execArgv: ['--no-node-snapshot'],
      testTimeout: 30_000,
      hookTimeout: 60_000,
      pool: 'forks',
      // Each file starts its own sandbox processes; two at a time fit two cores.
      maxWorkers: 2,
      // A fork runs file after file with the modules it already loaded: the kernel, fastify, zod and
      // the plugins are evaluated once per fork instead of once per file. On 2 cores the Node 20
      // suite went from 730 to 539 s, with the same 2,624 tests passing. It holds because the
      // tests keep no state at module level: each file starts its own kernels and stores and stops
      // them, and the one that fakes a clock (wedge.test.ts) restores it after each test. A test that must have fresh
      // modules starts a process of its own (test/sdk/plugin/lazy.test.ts does).
      isolate: false,
      env: { SVC_TEST_RUN: process.env.SVC_TEST_RUN },
      globalSetup: ['test/helpers/pg-global.ts'],
      projects: [
        // Only the repository's own tests: services/*.test.ts are services' tests, run by `svc test`
        // (test/e2e/svc-test.test.ts runs them that way).
        { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SOLO_SUITES] } },
        ...(withPostgres ? [{ extends: true, test: { name: 'postgres', include: POSTGRES_SUITES, env: { SVC_TEST_STORE: 'postgres' } } }] : []),
        { extends: true, test: { name: 'solo', include: SOLO_SUITES, maxWorkers: 1, sequence: { groupOrder: 1 } } },
      ],
    },
  };
});
