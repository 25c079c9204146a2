import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { closedPort, direct, MYSQL_URL, PG_URL, PROBE, uniqueSuffix, type Direct, type Outcome } from './support.ts';

const SUFFIX = uniqueSuffix();
const NOWHERE = await closedPort();

const CONFIG = `
sql_connection:
  - { name: pg, engine: postgresql, url: '${PG_URL}', pool_size: 3, max_rows: 100, max_result_bytes: 65536, statement_timeout_ms: 400 }
  - { name: pg_one, engine: postgresql, url: '${PG_URL}', pool_size: 1, connect_timeout_ms: 300 }
  - { name: pg_one_wait, engine: postgresql, url: '${PG_URL}', pool_size: 1 }
  - { name: pg_ro, engine: postgresql, url: '${PG_URL}', read_only: true }
  - { name: pg_theirs, engine: postgresql, url: '${PG_URL}', allowed_services: [stranger] }
  - { name: pg_down, engine: postgresql, host: 127.0.0.1, port: ${NOWHERE}, database: test, username: postgres, connect_timeout_ms: 1000 }
  - { name: my, engine: mysql, url: '${MYSQL_URL}', pool_size: 3, max_rows: 100, max_result_bytes: 65536, statement_timeout_ms: 400 }
  - { name: my_one, engine: mysql, url: '${MYSQL_URL}', pool_size: 1, connect_timeout_ms: 300 }
  - { name: my_one_wait, engine: mysql, url: '${MYSQL_URL}', pool_size: 1 }
  - { name: my_ro, engine: mysql, url: '${MYSQL_URL}', read_only: true }
  - { name: my_theirs, engine: mysql, url: '${MYSQL_URL}', allowed_services: [stranger] }
  - { name: my_down, engine: mysql, host: 127.0.0.1, port: ${NOWHERE}, database: test, username: root, connect_timeout_ms: 1000 }
channel_rest:
  - { name: probe, url_path: /probe, service: probe, method: POST, data_format: json, security: none }
  - { name: raw, url_path: /raw, service: raw, method: POST, data_format: json, security: none }
  - { name: short, url_path: /short, service: short, method: POST, data_format: json, security: none }
`;

/** PROBE with a time limit far below connect_timeout_ms (10 s). */
const SHORT = PROBE.replace('export default service({', 'export default service({\n  limits: { timeoutMs: 700 },');

/** Lets whatever the query raises escape, to see what the channel's caller gets. */
const RAW = `import { service, sql } from 'svc/sdk';
export default service({ POST: async (ctx) => (await sql(ctx.payload.conn).query(ctx.payload.text)).rows });
`;

const ENGINES = [
  {
    engine: 'postgresql' as const,
    conn: 'pg',
    p: (i: number) => `$${i}`,
    table: `sql_pg_${SUFFIX}`,
    sleep: 'SELECT pg_sleep(5)',
    hold: 'SELECT pg_sleep(1)',
    // In the select list, not in FROM: the set streams row by row instead of being
    // materialised first, which under load could outlast statement_timeout_ms.
    many: 'SELECT generate_series(1, 2000000) AS g',
    wide: "SELECT repeat('x', 1000) AS x FROM generate_series(1, 90) g",
    duplicate: '23505',
  },
  {
    engine: 'mysql' as const,
    conn: 'my',
    p: (_i: number) => '?',
    table: `sql_my_${SUFFIX}`,
    sleep: 'SELECT SLEEP(5)',
    hold: 'SELECT SLEEP(1)',
    // MariaDB's sequence engine: rows made as they are read.
    many: 'SELECT seq FROM seq_1_to_2000000',
    wide: "SELECT REPEAT('x', 1000) AS x FROM seq_1_to_90",
    duplicate: '23000',
  },
];

let k: TestKernel;
const clients: Partial<Record<'postgresql' | 'mysql', Direct>> = {};

beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: { 'probe.ts': PROBE, 'raw.ts': RAW, 'short.ts': SHORT } });
  for (const e of ENGINES) {
    const d = (clients[e.engine] = await direct(e.engine));
    await d.run(`CREATE TABLE ${e.table} (id int PRIMARY KEY, name varchar(100))`);
  }
});
afterAll(async () => {
  for (const e of ENGINES) {
    await clients[e.engine]?.run(`DROP TABLE IF EXISTS ${e.table}`);
    await clients[e.engine]?.close();
  }
  await k?.close();
});

async function calls(...list: unknown[][]): Promise<Outcome[]> {
  const res = await k.app.inject({ method: 'POST', url: '/probe', payload: { calls: list } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}
async function one(...call: unknown[]): Promise<Outcome> {
  return (await calls(call))[0]!;
}

describe.each(ENGINES)('$engine', (e) => {
  const db = () => clients[e.engine]!;

  it('runs parameterised statements: rows, rowCount and fields', async () => {
    const inserted = await one('query', e.conn, `INSERT INTO ${e.table} (id, name) VALUES (${e.p(1)}, ${e.p(2)})`, [1, "O'Brien; DROP TABLE x"]);
    expect(inserted.value).toMatchObject({ rows: [], rowCount: 1 });
    expect(await db().run(`SELECT id, name FROM ${e.table} WHERE id = 1`)).toEqual([{ id: 1, name: "O'Brien; DROP TABLE x" }]);
    const selected = await one('query', e.conn, `SELECT id, name FROM ${e.table} WHERE name = ${e.p(1)}`, ["O'Brien; DROP TABLE x"]);
    expect(selected.value.rows).toEqual([{ id: 1, name: "O'Brien; DROP TABLE x" }]);
    expect(selected.value.rowCount).toBe(1);
    expect(selected.value.fields).toEqual([
      { name: 'id', type: e.engine === 'postgresql' ? 'int4' : 'int' },
      { name: 'name', type: 'varchar' },
    ]);
    const updated = await one('query', e.conn, `UPDATE ${e.table} SET name = ${e.p(1)} WHERE id = ${e.p(2)}`, ['Ann', 1]);
    expect(updated.value.rowCount).toBe(1);
  });

  it('commits a transaction, and rolls one back naming the failed statement', async () => {
    const ins = (id: number) => ({ text: `INSERT INTO ${e.table} (id, name) VALUES (${e.p(1)}, ${e.p(2)})`, params: [id, `row ${id}`] });
    const done = await one('transaction', e.conn, [ins(10), ins(11), { text: `SELECT count(*) AS n FROM ${e.table} WHERE id >= 10` }]);
    expect(done.value.map((r: { rowCount: number }) => r.rowCount)).toEqual([1, 1, 1]);
    expect(String(done.value[2].rows[0].n)).toBe('2');
    const failed = await one('transaction', e.conn, [ins(20), ins(10)]);
    expect(failed.error).toMatchObject({ name: 'SqlError', code: e.duplicate, statement: 1 });
    expect(await db().run(`SELECT id FROM ${e.table} WHERE id IN (10, 11, 20) ORDER BY id`)).toEqual([{ id: 10 }, { id: 11 }]);
  });

  it(`stops a result past max_rows while it arrives, and the connection works after`, async () => {
    const before = process.memoryUsage().heapUsed;
    const started = performance.now();
    const [over, after] = await calls(['query', e.conn, e.many], ['query', e.conn, `SELECT ${e.p(1)} AS n`, [5]]);
    expect(over!.error).toMatchObject({ name: 'SqlError', code: 'too_many_rows' });
    expect(over!.error!.message).toContain('max_rows (100)');
    // Two million rows were never gathered: little memory, little time.
    expect(performance.now() - started).toBeLessThan(5000);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(100 * 1024 * 1024);
    expect(String(after!.value.rows[0].n)).toBe('5');
  });

  it('stops a result past max_result_bytes', async () => {
    const over = await one('query', e.conn, e.wide);
    expect(over.error).toMatchObject({ name: 'SqlError', code: 'too_large' });
    expect(over.error!.message).toContain('max_result_bytes (65536)');
  });

  it('cancels a statement past statement_timeout_ms', async () => {
    const started = performance.now();
    const [slow, after] = await calls(['query', e.conn, e.sleep], ['query', e.conn, 'SELECT 1 AS one']);
    expect(slow!.error).toMatchObject({ name: 'SqlError', code: 'timeout' });
    expect(performance.now() - started).toBeLessThan(3000);
    expect(after!.value.rows).toEqual([{ one: 1 }]);
  });

  it('refuses writes on a read_only connection in the database', async () => {
    const refused = await one('query', `${e.conn}_ro`, `INSERT INTO ${e.table} (id, name) VALUES (${e.p(1)}, 'ro')`, [99]);
    expect(refused.error).toMatchObject({ name: 'SqlError', code: 'read_only' });
    expect(await db().run(`SELECT id FROM ${e.table} WHERE id = 99`)).toEqual([]);
    expect((await one('query', `${e.conn}_ro`, `SELECT count(*) AS n FROM ${e.table}`)).value.rowCount).toBe(1);
  });

  it('refuses wrong parameter shapes: in the SDK, and on the host for what the SDK lets through', async () => {
    const [undef, badBytes, tooMany, notArray] = await calls(
      ['query', e.conn, `SELECT ${e.p(1)} AS v`, [{ $undefined: true }]],
      ['query', e.conn, `SELECT ${e.p(1)} AS v`, [{ $bytes: 'not base64!' }]],
      ['query', e.conn, 'SELECT 1', Array.from({ length: 10_001 }, () => 1)],
      ['transaction', e.conn, [{ text: '' }]],
    );
    expect(undef!.error).toMatchObject({ name: 'TypeError' });
    expect(undef!.error!.message).toContain('params[0]');
    expect(badBytes!.error!.message).toMatch(/invalid arguments for sql.query: params.0/);
    expect(tooMany!.error!.message).toMatch(/invalid arguments for sql.query: params/);
    expect(notArray!.error).toMatchObject({ name: 'TypeError' });
  });

  it('answers NotFound for an unknown connection and Forbidden for one not allowed', async () => {
    const [unknown, forbidden] = await calls(['query', `${e.conn}_nope`, 'SELECT 1'], ['query', `${e.conn}_theirs`, 'SELECT 1']);
    expect(unknown!.error).toMatchObject({ kind: 'NotFound' });
    expect(unknown!.error!.message).toContain(`No SQL connection named '${e.conn}_nope'`);
    expect(forbidden!.error).toMatchObject({ kind: 'Forbidden' });
  });

  it('answers ServiceUnavailable when no pooled connection frees within connect_timeout_ms', async () => {
    const holding = calls(['query', `${e.conn}_one`, e.hold]);
    const busy = () => k.kernel.api.connections().find((c) => c.name === `${e.conn}_one`)?.pool?.busy;
    await expect.poll(busy).toBe(1);
    const waited = await one('query', `${e.conn}_one`, 'SELECT 1');
    expect(waited.error).toMatchObject({ kind: 'ServiceUnavailable', message: `SQL connection '${e.conn}_one' is unavailable: no free connection within connect_timeout_ms` });
    expect((await holding)[0]!.value.rowCount).toBe(1);
  });

  it("ends the wait for a connection before the calling service's time limit, so the service catches ServiceUnavailable", async () => {
    const holding = calls(['query', `${e.conn}_one_wait`, e.hold]);
    const busy = () => k.kernel.api.connections().find((c) => c.name === `${e.conn}_one_wait`)?.pool?.busy;
    await expect.poll(busy).toBe(1);
    // Waiting out connect_timeout_ms (10 s) ended the call with SERVICE_TIMEOUT.
    const res = await k.app.inject({ method: 'POST', url: '/short', payload: { calls: [['query', `${e.conn}_one_wait`, 'SELECT 1']] } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()[0].error).toMatchObject({ kind: 'ServiceUnavailable', message: expect.stringMatching(new RegExp(`^SQL connection '${e.conn}_one_wait' is unavailable: no connection before the calling service's time limit \\(\\d+ ms left\\)$`)) });
    expect((await holding)[0]!.value.rowCount).toBe(1);
    // The connection the call stopped waiting for went back to the pool: the next call gets it.
    expect((await one('query', `${e.conn}_one_wait`, 'SELECT 1')).value.rowCount).toBe(1);
  });

  it('lets an uncaught SqlError fail the service (500) and an uncaught refusal answer with its status', async () => {
    const post = (payload: object) => k.app.inject({ method: 'POST', url: '/raw', payload });
    const failed = await post({ conn: e.conn, text: 'SELECT * FROM no_such_table_here' });
    expect(failed.statusCode).toBe(500);
    expect(failed.body).not.toContain('127.0.0.1');
    expect((await post({ conn: `${e.conn}_nope`, text: 'SELECT 1' })).statusCode).toBe(404);
    expect((await post({ conn: `${e.conn}_down`, text: 'SELECT 1' })).statusCode).toBe(503);
  });

  it('answers ServiceUnavailable when the database is down, and the server stays up', async () => {
    const [down, fine] = await calls(['query', `${e.conn}_down`, 'SELECT 1'], ['query', e.conn, 'SELECT 1 AS one']);
    expect(down!.error).toMatchObject({ kind: 'ServiceUnavailable' });
    expect(down!.error!.message).toBe(`SQL connection '${e.conn}_down' is unavailable: connection refused`);
    expect(fine!.value.rows).toEqual([{ one: 1 }]);
  });
});
