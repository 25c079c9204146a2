import type BetterSqlite3 from 'better-sqlite3';
import { SQLITE_LINES, loadLine } from '../platform/native.ts';

let driver: typeof BetterSqlite3 | undefined;

/** better-sqlite3 built for this Node (kernel/native.ts says why there are two lines). */
export function sqliteDriver(): typeof BetterSqlite3 {
  return (driver ??= loadLine<typeof BetterSqlite3>(SQLITE_LINES));
}
