import { describe, expect, it } from 'vitest';
import { checkPluginShape } from '../../../../kernel/plugin-loader.ts';
import { composeSchema, crossCheck } from '../../../../kernel/config/compose.ts';
import formPlugin, { formChannelSchema } from '../../../../plugins/formats/form/plugin.ts';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';

const channel = { name: 'signup', url_path: '/signup', service: 'signup', security: 'none', data_format: 'form' };

describe('form plugin schema', () => {
  it('is a well-formed format plugin handling data_format form', () => {
    expect(checkPluginShape(formPlugin, 'test')).toBe(formPlugin);
    expect(formPlugin.contributes?.dataFormats).toEqual(['form']);
    expect(formPlugin.configSchema.safeParse({ x: 1 }).success).toBe(false);
  });

  it('defaults and bounds max_fields', () => {
    expect(formChannelSchema.parse({})).toEqual({ max_fields: 1000 });
    expect(formChannelSchema.safeParse({ max_fields: 0 }).success).toBe(false);
    expect(formChannelSchema.safeParse({ max_fields: 1.5 }).success).toBe(false);
    expect(formChannelSchema.safeParse({ fields: 3 }).success).toBe(false);
  });

  it('adds the form key to channels and flags it on other formats', () => {
    const schema = composeSchema([formPlugin]);
    const config = schema.parse({ channel_rest: [{ ...channel, form: { max_fields: 5 } }] }) as SvcConfig;
    expect(crossCheck(config, [formPlugin])).toEqual([]);
    config.channel_rest[0]!.data_format = 'xml';
    expect(crossCheck(config, [formPlugin])[0]?.path).toEqual(['channel_rest', 0, 'form']);
  });
});
