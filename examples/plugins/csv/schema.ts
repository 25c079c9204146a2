import { z } from 'zod';
import type { ConfigIssue, SvcConfig } from 'svc/sdk/plugin';

export const CSV = 'csv';
export const CSV_CONTENT_TYPE = 'text/csv; charset=utf-8';

/** The `csv:` field of a channel with `data_format: csv`. Every key has a default. */
export const csvChannelSchema = z
  .object({
    delimiter: z
      .string()
      .length(1)
      .refine((d) => !/["\r\n]/.test(d), 'cannot be a quote or a line break')
      .default(',')
      .describe('Field separator, one character, for reading and writing (`;` and tab are common).'),
    columns: z
      .boolean()
      .default(true)
      .describe(
        'true: the first row names the columns and each later row becomes an object; false: every row is an array of strings. ' +
          'Writing: objects get a header row of their keys either way.',
      ),
    trim: z.boolean().default(false).describe('Remove spaces around unquoted and quoted field values when reading.'),
    skip_empty_lines: z.boolean().default(true).describe('Ignore empty lines when reading instead of treating them as rows.'),
    relax_column_count: z
      .boolean()
      .default(false)
      .describe('Accept rows with more or fewer fields than the header; by default such a body is refused (400).'),
  })
  .strict();

export type CsvSettings = z.infer<typeof csvChannelSchema>;

// No `declare module 'svc/sdk/plugin'` for ChannelFields.csv here: svc bundles a csv format
// (plugins/formats/csv) that declares the key with its own settings type, and one key cannot
// carry two types. This plugin replaces the bundled one by name and parses `channel.csv` itself.

/** The plugin's own options (`plugins.csv.config`): none yet. */
export const csvOptionsSchema = z.object({}).strict().default({}).describe('The csv plugin has no options of its own; settings are per channel under `csv:`.');

/** `csv:` on a channel of another format is a mistake worth naming. */
export function checkSettingsPlacement(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  config.channel_rest.forEach((ch, i) => {
    if (ch.csv !== undefined && ch.data_format !== CSV) {
      issues.push({ path: ['channel_rest', i, 'csv'], message: 'csv settings apply only to channels with data_format: csv' });
    }
  });
  return issues;
}
