import { z } from 'zod';
import type { ConfigIssue, SvcConfig } from '../../../sdk/plugin/index.ts';

export const CSV = 'csv';

/** Defaults of the caps: a 1 MiB body (the default body limit) holds at most ~500 000 cells. */
export const CSV_LIMITS = { maxRows: 100_000, maxColumns: 1_000, maxCells: 1_000_000 } as const;

/** Names a record's key may not take: they would reach an object's prototype once merged. */
export const FORBIDDEN_COLUMNS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

// One character that is not a line break; the delimiter and the quote must also differ (checked below).
const oneCharacter = z
  .string()
  .length(1)
  .refine((c) => c !== '\r' && c !== '\n', 'cannot be a line break');

const columnName = z
  .string()
  .min(1)
  .refine((n) => !FORBIDDEN_COLUMNS.has(n), 'is a name that would reach an object prototype (__proto__, constructor, prototype)');

/** The `csv:` settings of a REST channel (or an inbound source) with `data_format: csv`. */
export const csvChannelSchema = z
  .object({
    delimiter: oneCharacter.default(',').describe('Field separator, one character, for reading and writing (`;` and a tab are common).'),
    quote: oneCharacter.default('"').describe('Quote character around fields that hold the delimiter, a quote or a line break; doubled inside a quoted field.'),
    header: z
      .boolean()
      .default(true)
      .describe('true: the first row is a header row that names the columns, and every later row is an object; false: every row is data (an array of strings, or an object when `columns` names the columns).'),
    columns: z
      .array(columnName)
      .min(1)
      .max(CSV_LIMITS.maxColumns)
      .optional()
      .describe('Column names to use instead of the header row: rows become objects with these keys. With header: true the file’s header row is skipped, not read for names.'),
    skip_empty_lines: z.boolean().default(true).describe('Ignore empty lines instead of reading them as rows.'),
    trim: z.boolean().default(false).describe('Remove white space around field values (outside quotes) when reading.'),
    encoding: z.enum(['utf8', 'latin1']).default('utf8').describe('Character encoding of bodies and replies: utf8 (invalid bytes are refused) or latin1 (ISO-8859-1). A request’s Content-Type charset, when it names one of the two, wins.'),
    bom: z.boolean().default(true).describe('Drop a UTF-8 byte order mark at the start of a body (spreadsheet exports write one); false keeps it as part of the first field.'),
    max_rows: z.number().int().min(1).max(10_000_000).default(CSV_LIMITS.maxRows).describe('Most data rows (the header row not counted) a body may hold; more is refused (400) without reading the rest.'),
    max_columns: z.number().int().min(1).max(100_000).default(CSV_LIMITS.maxColumns).describe('Most fields a row may hold; more is refused (400) as soon as the row passes it.'),
    max_cells: z
      .number()
      .int()
      .min(1)
      .max(100_000_000)
      .default(CSV_LIMITS.maxCells)
      .describe('Most fields a whole body may hold (header included): bounds the memory the parsed rows take, whatever their shape.'),
    cast: z
      .boolean()
      .default(false)
      .describe('Turn fields written as plain decimal numbers (`-12`, `3.5`, `1e3`; not `007`, `1,5` or empty) into numbers. Off by default: values stay strings, so codes with leading zeros and long digit strings survive.'),
    relax_column_count: z.boolean().default(false).describe('Accept rows with more or fewer fields than the header (or the first row); by default such a body is refused (400).'),
    escape_formulas: z
      .boolean()
      .default(true)
      .describe('When writing a reply, prefix a text cell that starts with = + - @ (or a tab or CR) with a quote (`\'`) so a spreadsheet shows it rather than running it as a formula; numbers are written as they are.'),
  })
  .strict()
  .refine((s) => s.delimiter !== s.quote, { message: 'the delimiter and the quote must differ', path: ['quote'] });

export type CsvSettings = z.output<typeof csvChannelSchema>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ChannelFields {
    csv?: CsvSettings;
  }
}

/** `csv:` on a channel of another format is a mistake worth naming. */
export function checkSettingsPlacement(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  config.channel_rest.forEach((ch, i) => {
    if (ch.csv !== undefined && ch.data_format !== CSV) issues.push({ path: ['channel_rest', i, 'csv'], message: 'csv settings apply only to channels with data_format: csv' });
  });
  return issues;
}
