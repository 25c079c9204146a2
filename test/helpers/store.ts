import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { SqliteStore } from '../../kernel/store/sqlite.ts';
import { PgStore } from '../../plugins/store/postgres/store.ts';
import type { DataStore } from '../../sdk/plugin/store.ts';

/**
 * Stores for tests. `SVC_TEST_STORE=postgres` (the `postgres` project of vitest.config.ts) runs
 * store-using suites on PostgreSQL: each SQLite file a test would open becomes a schema of its
 * own in the test database, named after the file, so reopening the file reopens the schema
 * (restart tests) and parallel files never meet. Schemas of one run share a prefix and are
 * dropped at its end (test/helpers/pg-global.ts).
 */
export const PG_URL = process.env.SVC_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const PG_SCHEMA_PREFIX = `svc_t_${process.env.SVC_TEST_RUN ?? 'local'}_`;

export function testStoreKind(): 'sqlite' | 'postgres' {
  return process.env.SVC_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';
}

/** Whether PostgreSQL answers at PG_URL within a second. */
export async function pgAnswers(url = PG_URL): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A schema of its own for `key` (created if needed), and the store URL that uses it. */
export async function pgSchemaUrl(key: string): Promise<string> {
  const schema = PG_SCHEMA_PREFIX + createHash('sha256').update(key).digest('hex').slice(0, 16);
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  } finally {
    await client.end();
  }
  const url = new URL(PG_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** Drops the schemas whose names start with `prefix` (a run's, or one test's). */
export async function dropPgSchemas(prefix = PG_SCHEMA_PREFIX): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 1_000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ name: string }>("SELECT nspname AS name FROM pg_namespace WHERE starts_with(nspname, $1)", [prefix]);
    for (const { name } of rows) await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
  } catch {
    /* PostgreSQL is not there: nothing was created */
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The store a test opens at `file`: that SQLite file, or on PostgreSQL the file's schema. */
export async function openTestStore(file = join(mkdtempSync(join(tmpdir(), 'svc-store-')), 'svc.db')): Promise<DataStore> {
  if (testStoreKind() === 'sqlite') return new SqliteStore(file);
  return PgStore.open(await pgSchemaUrl(file), { log: pino({ level: 'silent' }) });
}

/** Environment for a kernel whose store lives in `dataDir`: SVC_STORE on PostgreSQL, nothing on SQLite. */
export async function testStoreEnv(dataDir: string): Promise<NodeJS.ProcessEnv> {
  if (testStoreKind() === 'sqlite') return {};
  return { SVC_STORE: await pgSchemaUrl(join(dataDir, 'svc.db')) };
}
