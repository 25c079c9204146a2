import { isUtf8 } from 'node:buffer';
import { CsvError, parse } from 'csv-parse/sync';
import type { CsvSettings } from './schema.ts';

/** A body that cannot be read as CSV, or rows that cannot be written as CSV; the message is short and safe to send. */
export class CsvFormatError extends Error {}

/** Column names that would poison a plain object when merged naively (the JSON reader refuses the same). */
const POISON = new Set(['__proto__']);

/** CSV bytes → rows: objects keyed by the header row (columns: true) or arrays of strings. */
export function readCsv(body: Buffer, settings: CsvSettings): Record<string, string>[] | string[][] {
  if (!isUtf8(body)) throw new CsvFormatError('the body is not UTF-8 text');
  try {
    return parse(body.toString('utf8'), {
      bom: true,
      delimiter: settings.delimiter,
      columns: settings.columns ? checkHeader : false,
      trim: settings.trim,
      skip_empty_lines: settings.skip_empty_lines,
      relax_column_count: settings.relax_column_count,
    }) as Record<string, string>[] | string[][];
  } catch (err) {
    if (err instanceof CsvError) throw new CsvFormatError(shortReason(err));
    if (err instanceof CsvFormatError) throw err;
    throw err;
  }
}

function checkHeader(header: string[]): string[] {
  const seen = new Set<string>();
  for (const name of header) {
    if (name === '') throw new CsvFormatError('the header row has an empty column name');
    if (POISON.has(name)) throw new CsvFormatError(`the header row names a forbidden column '${name}'`);
    if (seen.has(name)) throw new CsvFormatError(`the header row names column '${name}' twice`);
    seen.add(name);
  }
  return header;
}

/** csv-parse messages look like "Invalid Record Length: columns length is 2, got 3 on line 2": keep them, bounded. */
function shortReason(err: CsvError): string {
  const msg = err.message.split('\n')[0]!;
  return msg.length > 200 ? `${msg.slice(0, 200)}…` : msg;
}

/** Rows → CSV text (RFC 4180: CRLF line ends, fields quoted when they hold the delimiter, a quote or a line break). */
export function writeCsv(rows: unknown, delimiter: string): string {
  if (!Array.isArray(rows)) throw new CsvFormatError('the response body must be a list of rows (objects or arrays)');
  if (rows.length === 0) return '';
  const lines: string[] = [];
  const field = (value: unknown, where: string): string => cell(value, delimiter, where);
  if (rows.every((r) => Array.isArray(r))) {
    rows.forEach((r: unknown[], i) => lines.push(r.map((v, j) => field(v, `row ${i + 1}, field ${j + 1}`)).join(delimiter)));
  } else if (rows.every((r) => r !== null && typeof r === 'object' && !Array.isArray(r))) {
    // The header is every key, in the order first seen; a row without a key writes an empty field.
    const columns: string[] = [];
    const known = new Set<string>();
    for (const r of rows as Record<string, unknown>[]) for (const k of Object.keys(r)) if (!known.has(k)) known.add(k) && columns.push(k);
    lines.push(columns.map((c) => field(c, 'header')).join(delimiter));
    rows.forEach((r: Record<string, unknown>, i) => lines.push(columns.map((c) => field(r[c], `row ${i + 1}, column '${c}'`)).join(delimiter)));
  } else {
    throw new CsvFormatError('every row must be an object, or every row an array');
  }
  return lines.join('\r\n') + '\r\n';
}

function cell(value: unknown, delimiter: string, where: string): string {
  let text: string;
  if (value === null || value === undefined) text = '';
  else if (typeof value === 'string') text = value;
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') text = String(value);
  else throw new CsvFormatError(`${where}: a nested value has no CSV form`);
  const needsQuotes = text.includes(delimiter) || /["\r\n]/.test(text) || text !== text.trim();
  return needsQuotes ? `"${text.replaceAll('"', '""')}"` : text;
}
