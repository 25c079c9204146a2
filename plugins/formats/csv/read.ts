import { isUtf8 } from 'node:buffer';
import { CsvError, Parser, type InfoField, type Options } from 'csv-parse';
import { FORBIDDEN_COLUMNS, type CsvSettings } from './schema.ts';

/**
 * CSV bytes → records. The body is already in memory (under the channel's body limit); what the
 * parse builds is bounded by the caps, checked as csv-parse goes, so a body of tiny cells stops
 * at a cap instead of growing an array of millions of strings.
 */

export type CsvRecords = Record<string, string | number>[] | (string | number)[][];

/** A body that is not acceptable CSV; the message is safe to send to a client (bounded, names line and column). */
export class CsvReadError extends Error {
  override readonly name = 'CsvReadError';
  constructor(message: string) {
    super(clip(message));
  }
}

/** Longest reason a client is told: csv-parse quotes field values, and a header name can be any length. */
const MAX_REASON_LENGTH = 300;
function clip(text: string, room = MAX_REASON_LENGTH): string {
  return text.length <= room ? text : `${text.slice(0, room - 1)}…`;
}

// Plain decimal numbers only: no leading zeros (codes, zip codes), no spaces, no hex, no empty.
const DECIMAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?$/;

/** The encoding a body is read in: a Content-Type charset naming UTF-8 or ISO-8859-1 wins over the setting. */
export function encodingOf(contentType: string | undefined, fallback: CsvSettings['encoding']): CsvSettings['encoding'] {
  const charset = contentType ? /;\s*charset\s*=\s*"?([A-Za-z0-9._-]+)/i.exec(contentType)?.[1]?.toLowerCase() : undefined;
  if (charset === 'utf-8' || charset === 'utf8') return 'utf8';
  if (charset === 'iso-8859-1' || charset === 'latin1' || charset === 'us-ascii') return 'latin1';
  if (charset !== undefined) throw new CsvReadError(`unsupported charset ${JSON.stringify(charset)}: send UTF-8 or ISO-8859-1`);
  return fallback;
}

function checkHeader(names: readonly string[]): string[] {
  const seen = new Set<string>();
  names.forEach((name, i) => {
    if (name === '') throw new CsvReadError(`the header row has an empty column name (column ${i + 1})`);
    if (FORBIDDEN_COLUMNS.has(name)) throw new CsvReadError(`the header row names a forbidden column ${JSON.stringify(name)} (column ${i + 1})`);
    if (seen.has(name)) throw new CsvReadError(`the header row names column ${JSON.stringify(clip(name, 100))} twice (column ${i + 1})`);
    seen.add(name);
  });
  return [...names];
}

/** csv-parse reasons ("Invalid Record Length: columns length is 2, got 3 on line 2"), first line, with the column where known. */
function reasonOf(err: CsvError): string {
  const first = err.message.split('\n')[0] ?? err.code;
  const column = (err as CsvError & { column?: unknown }).column;
  const withColumn = typeof column === 'number' && !/column/i.test(first) ? `${first} (column ${column + 1})` : first;
  return withColumn;
}

/** csv-parse's parser core, which its sync `parse` and its stream both drive; fed here chunk by chunk. */
interface ParserCore {
  parse(chunk: Buffer | undefined, end: boolean, push: (record: unknown) => void, close: () => void): Error | undefined;
  /** The fields of the record being read, before it is complete. */
  readonly state: { readonly record: readonly unknown[] };
  readonly info: { readonly lines: number };
}

/** The body is fed in chunks this big: between two, a row still being read is checked against max_columns. */
const CHUNK_BYTES = 64 * 1024;

/**
 * A reader for one channel's (or source's) settings, built once; each call reads one body.
 * Caps are checked per record (`on_record`, cheap) and, for a row still being read, between
 * 64 KiB chunks: a single row of millions of fields stops within a chunk of passing max_columns.
 * csv-parse's per-field hook (`cast`) is used only for `cast: true`: it costs ~10× the parse.
 */
export function createCsvReader(settings: CsvSettings): (body: Buffer, encoding?: CsvSettings['encoding']) => CsvRecords {
  const { max_rows, max_columns, max_cells } = settings;
  const tooManyColumns = (line: number) => new CsvReadError(`line ${line}: more than ${max_columns} columns (csv.max_columns)`);
  return function readCsv(body, encoding = settings.encoding) {
    if (encoding === 'utf8' && !isUtf8(body)) throw new CsvReadError('the body is not valid UTF-8 (set csv.encoding: latin1, or send charset=iso-8859-1, for ISO-8859-1 text)');
    let cells = 0;
    let rows = 0;
    const records: unknown[] = [];
    const header = (names: string[]): string[] => {
      if (names.length > max_columns) throw tooManyColumns(1);
      cells += names.length;
      return checkHeader(names);
    };
    const options: Options = {
      bom: settings.bom,
      delimiter: settings.delimiter,
      quote: settings.quote,
      // A quote is escaped by doubling it, whichever character the channel quotes with.
      escape: settings.quote,
      encoding,
      trim: settings.trim,
      skip_empty_lines: settings.skip_empty_lines,
      relax_column_count: settings.relax_column_count,
      columns: settings.columns ? settings.columns : settings.header ? header : false,
      from_line: settings.columns && settings.header ? 2 : 1,
      on_record: (record, context) => {
        const fields = core.state.record.length;
        if (fields > max_columns) throw tooManyColumns(context.lines);
        if (++rows > max_rows) throw new CsvReadError(`line ${context.lines}: more than ${max_rows} rows (csv.max_rows)`);
        if ((cells += fields) > max_cells) throw new CsvReadError(`line ${context.lines}: more than ${max_cells} fields in the body (csv.max_cells)`);
        return record;
      },
    };
    if (settings.cast) options.cast = castNumber;
    const core = (new Parser(options) as unknown as { api: ParserCore }).api;
    const push = (record: unknown) => void records.push(record);
    const close = () => {};
    try {
      for (let at = 0; at < body.length; at += CHUNK_BYTES) {
        const failed = core.parse(body.subarray(at, at + CHUNK_BYTES), false, push, close);
        if (failed) throw failed;
        if (core.state.record.length > max_columns) throw tooManyColumns(core.info.lines);
      }
      const failed = core.parse(undefined, true, push, close);
      if (failed) throw failed;
    } catch (err) {
      if (err instanceof CsvError) throw new CsvReadError(reasonOf(err));
      throw err;
    }
    return records as CsvRecords;
  };
}

/** `cast: true`: plain decimal numbers become numbers; header names and quoted fields (quoted to stay text) do not. */
function castNumber(value: string, context: InfoField): string | number {
  return !context.header && !context.quoting && DECIMAL.test(value) ? Number(value) : value;
}
