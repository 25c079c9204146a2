import pg from 'pg';
import { PG_URL } from './store.ts';

/** Ends a PostgreSQL backend as an administrator (or a failover) would. */
export async function terminateBackend(pid: number): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  } finally {
    await admin.end();
  }
}

/** Polls until check passes; the time it took. */
export async function until(check: () => boolean | Promise<boolean>, ms = 5_000, what = 'condition'): Promise<number> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - start;
}
