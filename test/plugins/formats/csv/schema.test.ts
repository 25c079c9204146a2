import { describe, expect, it } from 'vitest';
import { checkPluginShape } from '../../../../kernel/plugin-loader.ts';
import { composeSchema, crossCheck } from '../../../../kernel/config/compose.ts';
import csvPlugin from '../../../../plugins/formats/csv/plugin.ts';
import { csvChannelSchema } from '../../../../plugins/formats/csv/schema.ts';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';

const channel = { name: 'import', url_path: '/import', service: 'import', security: 'none', data_format: 'csv' };

describe('csv plugin schema', () => {
  it('is a well-formed format plugin handling data_format csv, for channels and messages', () => {
    expect(checkPluginShape(csvPlugin, 'test')).toBe(csvPlugin);
    expect(csvPlugin.kind).toBe('format');
    expect(csvPlugin.contributes?.dataFormats).toEqual(['csv']);
    expect(Object.keys(csvPlugin.contributes?.messageFormats ?? {})).toEqual(['csv']);
    expect(csvPlugin.configSchema.safeParse({}).success).toBe(true);
    expect(csvPlugin.configSchema.safeParse({ delimiter: ';' }).success).toBe(false);
  });

  it('defaults every setting: header row, strings, UTF-8, BOM dropped, capped, formulas escaped', () => {
    expect(csvChannelSchema.parse({})).toEqual({
      delimiter: ',',
      quote: '"',
      header: true,
      skip_empty_lines: true,
      trim: false,
      encoding: 'utf8',
      bom: true,
      max_rows: 100_000,
      max_columns: 1_000,
      max_cells: 1_000_000,
      cast: false,
      relax_column_count: false,
      escape_formulas: true,
    });
  });

  it.each<[string, Record<string, unknown>]>([
    ['a two-character delimiter', { delimiter: ';;' }],
    ['an empty delimiter', { delimiter: '' }],
    ['a line break as delimiter', { delimiter: '\n' }],
    ['a line break as quote', { quote: '\r' }],
    ['the same delimiter and quote', { delimiter: "'", quote: "'" }],
    ['an encoding csv cannot read', { encoding: 'utf16le' }],
    ['zero rows', { max_rows: 0 }],
    ['a fractional column cap', { max_columns: 1.5 }],
    ['a cell cap past the ceiling', { max_cells: 1e9 }],
    ['an empty column list', { columns: [] }],
    ['an empty column name', { columns: ['a', ''] }],
    ['a __proto__ column', { columns: ['__proto__'] }],
    ['a constructor column', { columns: ['constructor'] }],
    ['cast as a string', { cast: 'numbers' }],
    ['an unknown key', { separator: ';' }],
  ])('refuses %s', (_label, settings) => {
    expect(csvChannelSchema.safeParse(settings).success).toBe(false);
  });

  it('accepts a tab delimiter, a single-quote quote, explicit columns and latin1', () => {
    expect(csvChannelSchema.parse({ delimiter: '\t', quote: "'", columns: ['id', 'name'], encoding: 'latin1', header: false })).toMatchObject({ delimiter: '\t', quote: "'", columns: ['id', 'name'], encoding: 'latin1', header: false });
  });

  it('adds the csv key to channels and flags it on a channel of another format', () => {
    const schema = composeSchema([csvPlugin]);
    expect(schema.safeParse({ channel_rest: [{ ...channel, csv: { delimiter: ';' } }] }).success).toBe(true);
    expect(schema.safeParse({ channel_rest: [{ ...channel, csv: { delimiter: 5 } }] }).success).toBe(false);
    const config = schema.parse({ channel_rest: [{ ...channel, csv: {} }] }) as SvcConfig;
    expect(crossCheck(config, [csvPlugin])).toEqual([]);
    config.channel_rest[0]!.data_format = 'json';
    expect(crossCheck(config, [csvPlugin])).toEqual([{ path: ['channel_rest', 0, 'csv'], message: 'csv settings apply only to channels with data_format: csv' }]);
  });
});
