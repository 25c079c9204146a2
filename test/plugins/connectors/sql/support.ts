import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import pg from 'pg';

export const PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
export const MYSQL_URL = 'mysql://root@127.0.0.1:3306/test';

/** A suffix for this file's tables and users: test files run in parallel, on several Node lines in CI. */
export function uniqueSuffix(): string {
  return randomBytes(4).toString('hex');
}

/** A port nothing listens on (taken, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A direct client, outside svc, to set up tables and check what the service really did. */
export interface Direct {
  run(text: string, params?: unknown[]): Promise<Array<Record<string, unknown>>>;
  close(): Promise<void>;
}

export async function direct(engine: 'postgresql' | 'mysql'): Promise<Direct> {
  if (engine === 'postgresql') {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    return { run: async (text, params) => (await client.query(text, params)).rows, close: () => client.end() };
  }
  const conn = await mysql.createConnection({ uri: MYSQL_URL });
  return { run: async (text, params) => (await conn.query(text, params))[0] as Array<Record<string, unknown>>, close: () => conn.end() };
}

/**
 * Runs the SDK calls of the payload in order and answers each one's value or the error it threw,
 * so a test reads what a service sees. A param `{ $u8: [..] }` becomes a Uint8Array, `{ $date: iso }` a Date.
 */
export const PROBE = `import { service, sql } from 'svc/sdk';
const revive = (p) => p && typeof p === 'object' && '$u8' in p ? new Uint8Array(p.$u8) : p && typeof p === 'object' && '$date' in p ? new Date(p.$date) : p && typeof p === 'object' && '$undefined' in p ? undefined : p;
export default service({
  async POST(ctx) {
    const out = [];
    for (const [op, name, ...args] of ctx.payload.calls) {
      try {
        if (op === 'query') out.push({ value: await sql(name).query(args[0], args[1] === undefined ? undefined : args[1].map(revive)) });
        else out.push({ value: await sql(name).transaction(args[0].map((s) => ({ text: s.text, params: s.params?.map(revive) }))) });
      } catch (e) {
        out.push({ error: { name: e.name, kind: e.kind, code: e.code, statement: e.statement, message: String(e.message) } });
      }
    }
    return out;
  },
});
`;

export type Outcome = { value?: any; error?: { name: string; kind?: string; code?: string; statement?: number; message: string } };
