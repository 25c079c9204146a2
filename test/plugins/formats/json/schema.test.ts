import { describe, expect, it } from 'vitest';
import { checkPluginShape } from '../../../../kernel/plugin-loader.ts';
import { composeSchema } from '../../../../kernel/config/compose.ts';
import jsonPlugin from '../../../../plugins/formats/json/plugin.ts';

const channel = { name: 'greet', url_path: '/greet', service: 'greet', security: 'none' };

describe('json plugin schema', () => {
  it('is a well-formed format plugin handling data_format json', () => {
    expect(checkPluginShape(jsonPlugin, 'test')).toBe(jsonPlugin);
    expect(jsonPlugin.kind).toBe('format');
    expect(jsonPlugin.contributes?.dataFormats).toEqual(['json']);
  });

  it('has no options and refuses unknown ones', () => {
    expect(jsonPlugin.configSchema.safeParse({}).success).toBe(true);
    expect(jsonPlugin.configSchema.safeParse({ strict: false }).success).toBe(false);
  });

  it('makes json a valid data_format, and the default one', () => {
    const schema = composeSchema([jsonPlugin]);
    expect(schema.parse({ channel_rest: [channel] }).channel_rest[0]!.data_format).toBe('json');
    expect(schema.safeParse({ channel_rest: [{ ...channel, data_format: 'json' }] }).success).toBe(true);
    expect(schema.safeParse({ channel_rest: [{ ...channel, data_format: 'jsonl' }] }).success).toBe(false);
  });
});
