import { describe, expect, it } from 'vitest';
import { ConfigError, readSource, validate } from '../../../../kernel/config/store.ts';
import { checkPluginShape } from '../../../../kernel/plugin-loader.ts';
import jsonPlugin from '../../../../plugins/formats/json/plugin.ts';
import csvPlugin from '../../../../examples/plugins/csv/plugin.ts';
import { csvChannelSchema } from '../../../../examples/plugins/csv/schema.ts';

function issuesOf(channel: Record<string, unknown>): string[] {
  const yaml = JSON.stringify({ channel_rest: [{ name: 'c', url_path: '/c', service: 's', security: 'none', data_format: 'csv', ...channel }] });
  try {
    validate(readSource(yaml, {}), [jsonPlugin, csvPlugin], {});
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  return [];
}

describe('csv plugin schema', () => {
  it('is a well-formed format plugin handling data_format csv', () => {
    expect(checkPluginShape(csvPlugin, 'test')).toBe(csvPlugin);
    expect(csvPlugin.kind).toBe('format');
    expect(csvPlugin.contributes?.dataFormats).toEqual(['csv']);
    expect(csvPlugin.configSchema.parse(undefined)).toEqual({});
  });

  it('describes every channel setting', () => {
    for (const [key, schema] of Object.entries(csvChannelSchema.shape)) expect(schema.description, key).toBeTruthy();
  });

  it('defaults every setting', () => {
    expect(csvChannelSchema.parse({})).toEqual({ delimiter: ',', columns: true, trim: false, skip_empty_lines: true, relax_column_count: false });
  });

  it('accepts csv settings on a csv channel', () => {
    expect(issuesOf({})).toEqual([]);
    expect(issuesOf({ csv: { delimiter: ';', columns: false, trim: true } })).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['a two-character delimiter', { csv: { delimiter: ';;' } }, /channel_rest\[0\]\.csv\.delimiter/],
    ['a quote as delimiter', { csv: { delimiter: '"' } }, /channel_rest\[0\]\.csv\.delimiter: cannot be a quote/],
    ['columns as text', { csv: { columns: 'yes' } }, /channel_rest\[0\]\.csv\.columns/],
    ['an unknown setting', { csv: { quote: "'" } }, /channel_rest\[0\]\.csv.*quote/],
    ['csv settings on a json channel', { data_format: 'json', csv: {} }, /channel_rest\[0\]\.csv: csv settings apply only to channels with data_format: csv/],
  ])('refuses %s', (_label, channel, pattern) => {
    expect(issuesOf(channel).join('\n')).toMatch(pattern);
  });
});
