import { describe, expect, it } from 'vitest';
import { checkPluginShape } from '../../../../kernel/plugin-loader.ts';
import { composeSchema, crossCheck } from '../../../../kernel/config/compose.ts';
import jsonPlugin, { jsonChannelSchema } from '../../../../plugins/formats/json/plugin.ts';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';

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

  it('defaults and bounds json.max_depth', () => {
    expect(jsonChannelSchema.parse({})).toEqual({ max_depth: 100 });
    expect(jsonChannelSchema.parse({ max_depth: 1000 })).toEqual({ max_depth: 1000 });
    for (const max_depth of [0, 1001, 2.5, '100']) expect(jsonChannelSchema.safeParse({ max_depth }).success).toBe(false);
    expect(jsonChannelSchema.safeParse({ depth: 3 }).success).toBe(false);
  });

  it('adds the json key to channels and flags it on other formats', () => {
    const schema = composeSchema([jsonPlugin]);
    const config = schema.parse({ channel_rest: [{ ...channel, json: { max_depth: 5 } }] }) as SvcConfig;
    expect(crossCheck(config, [jsonPlugin])).toEqual([]);
    config.channel_rest[0]!.data_format = 'xml';
    expect(crossCheck(config, [jsonPlugin])[0]?.path).toEqual(['channel_rest', 0, 'json']);
  });
});
