import { describe, expect, it } from 'vitest';
import type { SvcConfig } from '../../../../sdk/plugin/index.ts';
import { sqlEntrySchema, validateSql } from '../../../../plugins/connectors/sql/schema.ts';
import { queryArgs, transactionArgs } from '../../../../plugins/connectors/sql/host-calls.ts';

const base = { name: 'crm', engine: 'postgresql', url: 'postgres://app:secret@db:5432/crm' } as const;

function issuesOf(entries: unknown[], secrets: Array<{ name: string }> = []): string[] {
  const parsed = entries.map((e) => sqlEntrySchema.parse(e));
  return validateSql({ sql_connection: parsed, secrets } as unknown as SvcConfig).map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('sql_connection schema', () => {
  it('fills the documented defaults', () => {
    expect(sqlEntrySchema.parse(base)).toMatchObject({ pool_size: 10, statement_timeout_ms: 30_000, connect_timeout_ms: 10_000, idle_timeout_ms: 30_000, read_only: false, max_rows: 10_000, max_result_bytes: 16 * 1024 * 1024, ready_check: false });
  });

  it('marks the url and the password write-only and describes every key', () => {
    const json = sqlEntrySchema.toJSONSchema() as { properties: Record<string, { writeOnly?: boolean; description?: string }> };
    expect(json.properties.url!.writeOnly).toBe(true);
    expect(json.properties.password!.writeOnly).toBe(true);
    for (const [key, prop] of Object.entries(json.properties)) expect(prop.description, key).toBeTruthy();
  });

  it('refuses unknown keys, bad engines and out-of-range numbers', () => {
    expect(sqlEntrySchema.safeParse({ ...base, colour: 'red' }).success).toBe(false);
    expect(sqlEntrySchema.safeParse({ ...base, engine: 'oracle' }).success).toBe(false);
    expect(sqlEntrySchema.safeParse({ ...base, pool_size: 0 }).success).toBe(false);
    expect(sqlEntrySchema.safeParse({ ...base, max_result_bytes: 10 }).success).toBe(false);
  });

  it('checks where to connect, duplicates and passwords, without echoing the url', () => {
    expect(issuesOf([base])).toEqual([]);
    expect(issuesOf([{ name: 'a', engine: 'postgresql', host: 'db', database: 'crm', username: 'app', password_secret: 'pw' }], [{ name: 'pw' }])).toEqual([]);
    expect(issuesOf([{ name: 'a', engine: 'postgresql' }])).toEqual(['sql_connection.0.host: give url, or host (with database and username)']);
    expect(issuesOf([{ ...base, engine: 'mysql' }])).toEqual(['sql_connection.0.url: a mysql url starts with mysql:// or mariadb://']);
    expect(issuesOf([{ ...base, host: 'other' }])).toEqual(['sql_connection.0.host: give url or the separate fields, not both']);
    expect(issuesOf([{ ...base, password: 'x' }])).toEqual(['sql_connection.0.url: the url holds a password and so does password / password_secret']);
    expect(issuesOf([{ ...base, url: 'postgres://a:secret@' + '%zz' }]).join()).not.toContain('secret');
    expect(issuesOf([{ name: 'a', engine: 'mysql', host: 'db', tls: { server_name: 'x' } }])).toEqual(['sql_connection.0.tls.server_name: mysql connections verify the certificate against the host; server_name is for postgresql']);
    expect(issuesOf([base, base])).toEqual(["sql_connection.1.name: duplicate connection name 'crm' (also sql_connection[0])"]);
    expect(issuesOf([{ name: 'a', engine: 'mysql', host: 'db', password_secret: 'nope' }])).toEqual(["sql_connection.0.password_secret: no secret named 'nope' in secrets:"]);
  });
});

describe('sql host call arguments', () => {
  it('take JSON values, { $bytes } and at most 10000 params, text up to 1 MB', () => {
    expect(queryArgs.safeParse({ connection: 'crm', text: 'SELECT $1', params: [null, true, 1.5, 's', [1], { a: 1 }, { $bytes: 'AAH/' }] }).success).toBe(true);
    expect(queryArgs.safeParse({ connection: 'crm', text: 'SELECT 1', params: [{ $bytes: '**' }] }).success).toBe(false);
    expect(queryArgs.safeParse({ connection: 'crm', text: 'SELECT 1', params: [{ $bytes: 'AA==', more: 1 }] }).success).toBe(false);
    expect(queryArgs.safeParse({ connection: 'crm', text: 'SELECT 1', params: Array(10_001).fill(1) }).success).toBe(false);
    expect(queryArgs.safeParse({ connection: 'crm', text: 'x'.repeat(1024 * 1024 + 1) }).success).toBe(false);
    expect(queryArgs.safeParse({ connection: 'crm', text: '' }).success).toBe(false);
    expect(transactionArgs.safeParse({ connection: 'crm', statements: [] }).success).toBe(false);
    expect(transactionArgs.safeParse({ connection: 'crm', statements: [{ text: 'SELECT 1' }] }).success).toBe(true);
  });
});
