import type { TestKernel } from '../../../helpers/kernel.ts';

/** Test support for the Use queue: reading its table and its control ops. */

export interface Row {
  id: number;
  channel: string | null;
  service: string;
  state: string;
  cid: string;
  attempts: number;
  first_received_at: number;
  next_attempt_at: number;
  errors: string;
}

export interface AttemptError {
  attempt: number;
  cid: string;
  at: string;
  kind: string;
  message: string;
}

export const rows = (k: TestKernel) => k.kernel.store.all<Row>('SELECT id, channel, service, state, cid, attempts, first_received_at, next_attempt_at, errors FROM use_queue_event ORDER BY id');

export const errorsOf = (row: Row) => JSON.parse(row.errors) as AttemptError[];

/** Waits (polling the table, 20 ms apart) until `done` holds for its rows. */
export async function until(k: TestKernel, done: (rows: Row[]) => boolean, timeoutMs = 10_000): Promise<Row[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const now = await rows(k);
    if (done(now)) return now;
    if (Date.now() > end) throw new Error(`condition not met in ${timeoutMs} ms; rows: ${JSON.stringify(now, null, 1)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A service error message as the kernel records it: `Error: <the thrown message>`. */
export function thrown<T>(e: AttemptError): T {
  return JSON.parse(e.message.replace(/^Error: /, '')) as T;
}

export const control = (k: TestKernel, op: string, args: unknown) => k.kernel.runControl(op, args);
