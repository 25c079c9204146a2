import { startProcess, startSvcCli, type Running } from '../lib.ts';
import { compareChannels } from '../peers/channel.ts';

/**
 * SQL connector: a channel whose service runs one one-row query (`SELECT $1::int AS n` on
 * PostgreSQL, `SELECT ? AS n` on MariaDB), against a bare Fastify route in its own Node process
 * running the same query on a bare pg (mysql2) pool of the same size, same load. Goal ≥ 0.6×.
 * The databases: SVC_BENCH_PG (default postgres://postgres@127.0.0.1:5432/test) and
 * SVC_BENCH_MYSQL (default mysql://root@127.0.0.1:3306/test).
 */
const PG = process.env.SVC_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
const MYSQL = process.env.SVC_BENCH_MYSQL ?? 'mysql://root@127.0.0.1:3306/test';
const POOL = 10;

const SERVICES = {
  'pg.ts': `import { service, sql } from 'svc/sdk';\nconst db = sql('bench');\nexport default service({ async handle() { return (await db.query('SELECT $1::int AS n', [1])).rows; } });\n`,
  'my.ts': `import { service, sql } from 'svc/sdk';\nconst db = sql('bench_my');\nexport default service({ async handle() { return (await db.query('SELECT ? AS n', [1])).rows; } });\n`,
};

function bareSql(kind: 'sql-pg' | 'sql-mysql', url: string): () => Promise<Running> {
  return async () => {
    const { target, stop } = await startProcess([kind, url]);
    return { url: target.url, pid: target.pids[0]!, stop };
  };
}

export async function run(): Promise<void> {
  const config = {
    server: { log_level: 'warn' },
    sql_connection: [
      { name: 'bench', engine: 'postgresql', url: PG, pool_size: POOL },
      { name: 'bench_my', engine: 'mysql', url: MYSQL, pool_size: POOL },
    ],
    channel_rest: [
      { name: 'pg', url_path: '/sql', service: 'pg', security: 'none' },
      { name: 'my', url_path: '/my', service: 'my', security: 'none' },
    ],
  };
  await compareChannels(
    `SQL: one one-row PostgreSQL query per request, pool of ${POOL} (goal ≥ 0.6×)`,
    [
      { name: 'bare Fastify + pg Pool (baseline)', note: 'bench/server.ts sql-pg, its own process', path: '/sql', start: bareSql('sql-pg', PG), alone: true },
      { name: 'svc channel → service → sql(bench).query', note: 'CLI, log level warn', path: '/sql', start: () => startSvcCli(config, SERVICES, '/sql') },
    ],
    'baseline',
  );
  await compareChannels(
    `SQL: one one-row MariaDB query per request, pool of ${POOL}`,
    [
      { name: 'bare Fastify + mysql2 pool, execute (baseline)', note: 'bench/server.ts sql-mysql, its own process', path: '/sql', start: bareSql('sql-mysql', MYSQL), alone: true },
      { name: 'svc channel → service → sql(bench_my).query', note: 'CLI, log level warn', path: '/my', start: () => startSvcCli(config, SERVICES, '/my') },
    ],
    'baseline',
  );
}
