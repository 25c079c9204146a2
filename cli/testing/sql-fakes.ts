import type { FakeSqlAnswer, FakeSqlConnection, FakeSqlHandler, SqlQuery } from '../../sdk/testing/index.ts';

function isSqlError(err: unknown): err is { code: string; message: string } {
  return err instanceof Error && err.name === 'SqlError' && typeof (err as { code?: unknown }).code === 'string';
}

/** A fake's answer as the host's: `{ rows, rowCount, fields }`, `{ failed }` for a SqlError it threw. */
function resultOf(answer: FakeSqlAnswer): { rows: Array<Record<string, unknown>>; rowCount: number; fields: Array<{ name: string; type: string }> } {
  const full = Array.isArray(answer) ? { rows: answer } : answer;
  const rows = full.rows ?? [];
  return { rows, rowCount: full.rowCount ?? rows.length, fields: full.fields ?? Object.keys(rows[0] ?? {}).map((name) => ({ name, type: 'unknown' })) };
}

/** What the fake of a connection answers a statement: a result, a failure, or why there is none. */
export async function fakeSqlAnswer(fake: FakeSqlConnection | undefined, query: SqlQuery): Promise<unknown> {
  if (fake === undefined) return 'no fake';
  const given = typeof fake === 'function' ? fake : (fake as Record<string, FakeSqlAnswer | FakeSqlHandler>)[query.text];
  if (given === undefined) return 'no answer';
  try {
    return resultOf(typeof given === 'function' ? await given(query) : given);
  } catch (err) {
    if (isSqlError(err)) return { failed: { code: err.code, message: err.message } };
    throw err;
  }
}
