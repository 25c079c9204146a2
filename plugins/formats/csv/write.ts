import type { CsvSettings } from './schema.ts';

/**
 * Service output → CSV text (RFC 4180: CRLF line ends; a field is quoted when it holds the
 * delimiter, the quote, a line break or leading/trailing space). Text cells that a spreadsheet
 * would run as a formula are neutralised unless the channel turns that off.
 */

/** Output that has no CSV form; the message names the row and column and goes into a 500's details. */
export class CsvWriteError extends Error {
  override readonly name = 'CsvWriteError';
}

// OWASP's list of formula triggers: = + - @, and tab / CR which some spreadsheets skip before one.
const FORMULA_START = /^[=+\-@\t\r]/;
// A number written as text is read as a number, not a formula: "-12" and "+3.5" stay as they are.
const PLAIN_NUMBER = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

type Row = Record<string, unknown> | unknown[];

export function createCsvWriter(settings: CsvSettings): (value: unknown) => string {
  const { delimiter, quote, escape_formulas } = settings;
  const doubledQuote = quote + quote;
  const needsQuotes = (text: string) => text.includes(delimiter) || text.includes(quote) || text.includes('\n') || text.includes('\r') || text !== text.trim();

  function cell(value: unknown, where: () => string): string {
    let text: string;
    if (value === null || value === undefined) return '';
    if (typeof value === 'string') {
      text = escape_formulas && FORMULA_START.test(value) && !PLAIN_NUMBER.test(value) ? `'${value}` : value;
    } else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') text = String(value);
    else throw new CsvWriteError(`${where()}: a nested value (object or list) has no CSV form`);
    return needsQuotes(text) ? quote + text.replaceAll(quote, doubledQuote) + quote : text;
  }

  // A row of one empty field would be an empty line, which readers skip: it is written quoted.
  const line = (cells: string[]) => (cells.length === 1 && cells[0] === '' ? `${quote}${quote}\r\n` : `${cells.join(delimiter)}\r\n`);

  return function writeCsv(value) {
    // A single object is a one-row table.
    const rows: Row[] = Array.isArray(value) ? (value as Row[]) : value !== null && typeof value === 'object' ? [value as Row] : notRows(value);
    if (rows.length === 0) return settings.columns ? line(settings.columns.map((c) => cell(c, () => 'header'))) : '';
    if (rows.every(Array.isArray)) {
      const out = settings.columns && settings.header ? [line(settings.columns.map((c) => cell(c, () => 'header')))] : [];
      rows.forEach((r, i) => out.push(line((r as unknown[]).map((v, j) => cell(v, () => `row ${i + 1}, field ${j + 1}`)))));
      return out.join('');
    }
    if (!rows.every((r) => r !== null && typeof r === 'object' && !Array.isArray(r))) throw new CsvWriteError('every row must be an object, or every row a list');
    // The channel's columns give the order; else every key, in the order first seen.
    const columns = settings.columns ?? keysInOrder(rows as Record<string, unknown>[]);
    const out = [line(columns.map((c) => cell(c, () => 'header')))];
    (rows as Record<string, unknown>[]).forEach((r, i) => out.push(line(columns.map((c) => cell(Object.hasOwn(r, c) ? r[c] : undefined, () => `row ${i + 1}, column ${JSON.stringify(c)}`)))));
    return out.join('');
  };
}

function notRows(value: unknown): never {
  throw new CsvWriteError(`a ${typeof value} is not a list of rows: return a list of objects or of lists (or text, or bytes)`);
}

function keysInOrder(rows: readonly Record<string, unknown>[]): string[] {
  const known = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r)) known.add(k);
  return [...known];
}
