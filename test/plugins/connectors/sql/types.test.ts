import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { direct, MYSQL_URL, PG_URL, PROBE, uniqueSuffix, type Outcome } from './support.ts';

const SUFFIX = uniqueSuffix();
const MY_TABLE = `sql_types_${SUFFIX}`;

const CONFIG = `
sql_connection:
  - { name: pg, engine: postgresql, url: '${PG_URL}' }
  - { name: my, engine: mysql, url: '${MYSQL_URL}' }
channel_rest:
  - { name: probe, url_path: /probe, service: probe, method: POST, data_format: json, security: none }
`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: { 'probe.ts': PROBE } });
});
afterAll(async () => {
  const d = await direct('mysql');
  await d.run(`DROP TABLE IF EXISTS ${MY_TABLE}`);
  await d.close();
  await k?.close();
});

async function one(...call: unknown[]): Promise<Outcome> {
  const res = await k.app.inject({ method: 'POST', url: '/probe', payload: { calls: [call] } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json()[0];
}

describe('values as services get them', () => {
  it('PostgreSQL: int8 and numeric as strings, dates ISO in UTC, bytea base64, json parsed', async () => {
    const r = await one(
      'query',
      'pg',
      `SELECT 9007199254740993::int8 AS big, 12.345::numeric(10,3) AS dec, 7::int2 AS small, 42::int4 AS int, 1.5::float8 AS f, true AS b,
        '2024-02-03'::date AS d, '2024-02-03 04:05:06.789123'::timestamp AS ts, '2024-02-03 04:05:06.789+02'::timestamptz AS tstz,
        '\\x01ff'::bytea AS bin, '{"a":[1,2]}'::jsonb AS j, '[1,"x"]'::json AS j2, NULL::text AS n, 'x'::text AS t, '1 day'::interval AS iv`,
    );
    expect(r.value.rows).toEqual([
      { big: '9007199254740993', dec: '12.345', small: 7, int: 42, f: 1.5, b: true, d: '2024-02-03', ts: '2024-02-03T04:05:06.789123Z', tstz: '2024-02-03T02:05:06.789Z', bin: 'Af8=', j: { a: [1, 2] }, j2: [1, 'x'], n: null, t: 'x', iv: '1 day' },
    ]);
    expect(r.value.fields.map((f: { type: string }) => f.type)).toEqual(['int8', 'numeric', 'int2', 'int4', 'float8', 'bool', 'date', 'timestamp', 'timestamptz', 'bytea', 'jsonb', 'json', 'text', 'text', 'interval']);
  });

  it('PostgreSQL: parameters as sent: bytes, JSON objects and arrays, dates, bigint text', async () => {
    const r = await one('query', 'pg', 'SELECT $1::bytea AS bin, $2::jsonb AS obj, $3::jsonb AS arr, $4::timestamptz AS at, $5::int8 + 1 AS big, $6::bool AS yes', [
      { $u8: [0, 1, 255] },
      { a: { b: 1 } },
      [1, 2, 3],
      { $date: '2024-01-02T03:04:05.678Z' },
      '9007199254740993',
      true,
    ]);
    expect(r.value.rows).toEqual([{ bin: 'AAH/', obj: { a: { b: 1 } }, arr: [1, 2, 3], at: '2024-01-02T03:04:05.678Z', big: '9007199254740994', yes: true }]);
  });

  it('MySQL/MariaDB: BIGINT and DECIMAL as strings, DATETIME/TIMESTAMP ISO in UTC, binary base64, TINYINT(1) a number', async () => {
    const d = await direct('mysql');
    try {
      await d.run(`CREATE TABLE ${MY_TABLE} (big BIGINT, dec_ DECIMAL(10,3), small SMALLINT, i INT, f DOUBLE, b TINYINT(1), d DATE, dt DATETIME(3), ts TIMESTAMP(3) NULL, bin VARBINARY(10), n VARCHAR(5), t TEXT)`);
    } finally {
      await d.close();
    }
    const insert = await one('query', 'my', `INSERT INTO ${MY_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
      '9007199254740993',
      '12.345',
      7,
      42,
      1.5,
      true,
      '2024-02-03',
      '2024-02-03 04:05:06.789',
      '2024-02-03 04:05:06.789',
      { $u8: [1, 255] },
      null,
      'x',
    ]);
    expect(insert.value.rowCount).toBe(1);
    const r = await one('query', 'my', `SELECT * FROM ${MY_TABLE}`);
    expect(r.value.rows).toEqual([
      { big: '9007199254740993', dec_: '12.345', small: 7, i: 42, f: 1.5, b: 1, d: '2024-02-03', dt: '2024-02-03T04:05:06.789Z', ts: '2024-02-03T04:05:06.789Z', bin: 'Af8=', n: null, t: 'x' },
    ]);
    expect(r.value.fields.map((f: { type: string }) => f.type)).toEqual(['bigint', 'decimal', 'smallint', 'int', 'double', 'tinyint', 'date', 'datetime', 'timestamp', 'varbinary', 'varchar', 'text']);
  });
});
