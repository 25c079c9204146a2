import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../admin/api/support.ts';
import { parseExposition, sampleValue, startObserved, type ObservedKernel } from '../../observe/support.ts';
import { closedPort, direct, MYSQL_URL, PG_URL, PROBE, uniqueSuffix, type Direct, type Outcome } from './support.ts';

const SUFFIX = uniqueSuffix();
const USER = `svc_sql_${SUFFIX}`;
const PASSWORD = `pw-${SUFFIX}`;
const MARKER = `svc_sql_terminate_${SUFFIX}`;
const NOWHERE = await closedPort();
const AUTH = { authorization: `Basic ${Buffer.from('admin:admin-test-password').toString('base64')}` };

const config = (extra = '') => `
secrets:
  - { name: db_password, value: '${PASSWORD}' }
  - { name: wrong_password, value: 'not-it' }
sql_connection:
  - { name: crm, engine: postgresql, url: '${PG_URL}', pool_size: 1, ready_check: true }
  - { name: lazy, engine: mysql, url: '${MYSQL_URL}' }
  - { name: vault, engine: mysql, host: 127.0.0.1, port: 3306, database: test, username: ${USER}, password_secret: db_password }
  - { name: refused, engine: mysql, host: 127.0.0.1, port: 3306, database: test, username: ${USER}, password_secret: wrong_password }
${extra}
channel_rest:
  - { name: probe, url_path: /probe, service: probe, method: POST, data_format: json, security: none }
`;

let k: ObservedKernel;
let my: Direct;
let pgDirect: Direct;

beforeAll(async () => {
  my = await direct('mysql');
  await my.run(`CREATE USER '${USER}'@'%' IDENTIFIED BY '${PASSWORD}'`);
  await my.run(`GRANT SELECT ON test.* TO '${USER}'@'%'`);
  pgDirect = await direct('postgresql');
  k = await startObserved({ config: config(), services: { 'probe.ts': PROBE } });
});
afterAll(async () => {
  await k?.close();
  await my?.run(`DROP USER IF EXISTS '${USER}'@'%'`);
  await my?.close();
  await pgDirect?.close();
});

async function calls(...list: unknown[][]): Promise<Outcome[]> {
  const res = await fetch(`${k.url}/probe`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ calls: list }) });
  expect(res.status).toBe(200);
  return (await res.json()) as Outcome[];
}

describe('SQL connections in health, metrics, the admin API and the vault', () => {
  it('logs in with the password of a named secret, and a wrong one is ServiceUnavailable', async () => {
    const [ok, refused] = await calls(['query', 'vault', 'SELECT CURRENT_USER() AS who'], ['query', 'refused', 'SELECT 1']);
    expect(ok!.value.rows[0].who).toBe(`${USER}@%`);
    expect(refused!.error).toMatchObject({ kind: 'ServiceUnavailable', message: "SQL connection 'refused' is unavailable: login refused" });
  });

  it('reports each connection in /ready: opened at start with ready_check, idle until first use without', async () => {
    await expect.poll(async () => (await (await fetch(`${k.admin}/ready`)).json()).connections?.find((c: { name: string }) => c.name === 'crm')?.state).toBe('up');
    const body = (await (await fetch(`${k.admin}/ready`)).json()) as { connections: Array<Record<string, unknown>> };
    expect(body.connections.find((c) => c.name === 'lazy')).toMatchObject({ kind: 'sql', role: 'connection', state: 'idle', ready_check: false });
    expect(body.connections.find((c) => c.name === 'refused')).toMatchObject({ state: 'down', reason: 'login refused' });
  });

  it('counts queries, errors, latency and pool use in /metrics', async () => {
    await calls(['query', 'crm', 'SELECT 1'], ['query', 'crm', 'SELECT * FROM no_such_table_here']);
    const samples = parseExposition(await (await fetch(`${k.admin}/metrics`, { headers: AUTH })).text());
    const labels = { kind: 'sql', connection: 'crm' };
    expect(sampleValue(samples, 'svc_connector_up', labels)).toBe(1);
    expect(sampleValue(samples, 'svc_connector_operations_total', { ...labels, operation: 'query', outcome: 'ok' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(samples, 'svc_connector_operations_total', { ...labels, operation: 'query', outcome: 'error' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(samples, 'svc_connector_operation_duration_seconds_count', labels)).toBeGreaterThanOrEqual(3);
    expect(sampleValue(samples, 'svc_connector_pool_connections', { ...labels, state: 'idle' })).toBe(1);
  });

  it('answers ServiceUnavailable when PostgreSQL ends the backend mid-query, and the next query works', async () => {
    const pending = calls(['query', 'crm', `SELECT pg_sleep(3) AS ${MARKER}`]);
    await expect.poll(async () => (await pgDirect.run(`SELECT pid FROM pg_stat_activity WHERE query LIKE '%AS ${MARKER}' AND pid <> pg_backend_pid()`)).length).toBe(1);
    await pgDirect.run(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%AS ${MARKER}' AND pid <> pg_backend_pid()`);
    const [lost] = await pending;
    expect(lost!.error).toMatchObject({ kind: 'ServiceUnavailable', message: "SQL connection 'crm' was lost during the statement" });
    const [after] = await calls(['query', 'crm', 'SELECT 2 AS two']);
    expect(after!.value.rows).toEqual([{ two: 2 }]);
  });

  it('lists the section in the admin API, the url write-only', async () => {
    const admin = new AdminClient(k.admin);
    expect((await admin.login('admin-test-password')).status).toBe(200);
    const res = await admin.get('/admin/api/resources/sql_connection');
    expect(res.status).toBe(200);
    expect(res.text).toContain('"crm"');
    expect(res.text).toContain('"vault"');
    expect(res.text).not.toContain(PG_URL);
  });

  it('puts /ready at 503 while a ready_check database is down; a config change keeps the connections it did not change', async () => {
    expect((await fetch(`${k.admin}/ready`)).status).toBe(200);
    const okQueries = async () => sampleValue(parseExposition(await (await fetch(`${k.admin}/metrics`, { headers: AUTH })).text()), 'svc_connector_operations_total', { kind: 'sql', connection: 'crm', operation: 'query', outcome: 'ok' });
    const before = await okQueries();
    expect(await k.writeConfig(config(`  - { name: gone, engine: postgresql, host: 127.0.0.1, port: ${NOWHERE}, database: test, username: postgres, ready_check: true, connect_timeout_ms: 500 }`))).toBe(true);
    await expect.poll(async () => (await fetch(`${k.admin}/ready`)).status).toBe(503);
    const body = (await (await fetch(`${k.admin}/ready`)).json()) as { connections: Array<Record<string, unknown>> };
    expect(body.connections.find((c) => c.name === 'gone')).toMatchObject({ state: 'down', reason: 'connection refused' });
    // crm's entry did not change: the same connection (its pool, its counts) serves on.
    expect(await okQueries()).toBeGreaterThanOrEqual(before);
    expect(before).toBeGreaterThan(0);
  });
});
