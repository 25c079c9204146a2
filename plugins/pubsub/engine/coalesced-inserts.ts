import type { Queryable, RunResult } from '../../../sdk/plugin/index.ts';

/** Rows per statement at most; 16 columns × 32 rows = 512 parameters, far below every dialect's limit. */
const MAX_ROWS = 32;

const ONE_ROW: Promise<RunResult> = Promise.resolve({ changes: 1 });

/** `INSERT INTO t (cols) VALUES (tuple)` split at VALUES, so n rows are `head VALUES tuple, tuple, …`. */
interface InsertShape {
  head: string;
  tuple: string;
  /** Multi-row texts by row count (powers of two only, so the store's statement cache stays small). */
  texts: Map<number, string>;
}

/**
 * The single-row INSERT statements a group commit may send as multi-row INSERTs. Each text must
 * be `INSERT INTO t (cols) VALUES (…)` with `?` placeholders (literals are fine), and its rows
 * must not depend on their order relative to other statements of the batch: no foreign keys or
 * triggers between the tables, and nothing in the batch reads them before the commit.
 */
export class InsertShapes {
  private readonly shapes = new Map<string, InsertShape>();

  constructor(texts: readonly string[]) {
    for (const sql of texts) {
      const at = sql.lastIndexOf(' VALUES ');
      const tuple = sql.slice(at + ' VALUES '.length);
      if (at < 0 || !/^INSERT INTO /.test(sql) || !tuple.startsWith('(') || !tuple.endsWith(')')) throw new Error(`not a single-row INSERT: ${sql}`);
      this.shapes.set(sql, { head: sql.slice(0, at), tuple, texts: new Map([[1, sql]]) });
    }
  }

  shape(sql: string): InsertShape | undefined {
    return this.shapes.get(sql);
  }
}

function textFor(shape: InsertShape, rows: number): string {
  let text = shape.texts.get(rows);
  if (text === undefined) {
    text = `${shape.head} VALUES ${new Array<string>(rows).fill(shape.tuple).join(', ')}`;
    shape.texts.set(rows, text);
  }
  return text;
}

/**
 * A transaction's Queryable that holds back the rows of coalescable INSERTs and sends them as
 * few multi-row statements: per statement, a store pays a call, a bind and a step on the event
 * loop, so a batch of 17 publishes writes 2 to 4 statements instead of 34. Any other statement
 * sends the held rows first, so reads and updates see them. A failing row fails its whole
 * statement, hence the transaction: the group committer then retries each write alone, which
 * finds the one at fault.
 */
export class CoalescedInserts implements Queryable {
  private readonly held = new Map<InsertShape, unknown[][]>();

  constructor(
    private readonly tx: Queryable,
    private readonly shapes: InsertShapes,
  ) {}

  run(sql: string, params: readonly unknown[] = []): Promise<RunResult> {
    const shape = this.shapes.shape(sql);
    if (shape === undefined) return this.flush().then(() => this.tx.run(sql, params));
    const rows = this.held.get(shape);
    if (rows) rows.push(params as unknown[]);
    else this.held.set(shape, [params as unknown[]]);
    return ONE_ROW;
  }

  async all<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    await this.flush();
    return this.tx.all<T>(sql, params);
  }

  async one<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    await this.flush();
    return this.tx.one<T>(sql, params);
  }

  /** Sends every held row: for each statement, chunks of 32, 16, … 1 rows, in the order they came. */
  async flush(): Promise<void> {
    if (this.held.size === 0) return;
    const held = [...this.held];
    this.held.clear();
    for (const [shape, rows] of held) {
      let at = 0;
      for (let size = MAX_ROWS; at < rows.length; size >>= 1) {
        while (rows.length - at >= size) {
          const params: unknown[] = [];
          for (let i = at; i < at + size; i++) for (const v of rows[i]!) params.push(v);
          await this.tx.run(textFor(shape, size), params);
          at += size;
        }
      }
    }
  }
}
