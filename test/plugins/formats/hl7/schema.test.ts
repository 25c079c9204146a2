import { describe, expect, it } from 'vitest';
import { checkPluginShape } from '../../../../kernel/plugin-loader.ts';
import { composeSchema } from '../../../../kernel/config/compose.ts';
import hl7Plugin from '../../../../plugins/formats/hl7/plugin.ts';

describe('hl7 plugin schema', () => {
  it('is a well-formed format plugin handling data_format hl7', () => {
    expect(checkPluginShape(hl7Plugin, 'test')).toBe(hl7Plugin);
    expect(hl7Plugin.kind).toBe('format');
    expect(hl7Plugin.contributes?.dataFormats).toEqual(['hl7']);
  });

  it('has no options and refuses unknown ones', () => {
    expect(hl7Plugin.configSchema.safeParse({}).success).toBe(true);
    expect(hl7Plugin.configSchema.safeParse({ charset: 'latin1' }).success).toBe(false);
  });

  it('makes hl7 a valid channel data_format', () => {
    const schema = composeSchema([hl7Plugin]);
    const channel = { name: 'adt', url_path: '/adt', service: 'adt', security: 'none', data_format: 'hl7' };
    expect(schema.safeParse({ channel_rest: [channel] }).success).toBe(true);
    expect(schema.safeParse({ channel_rest: [{ ...channel, data_format: 'hl8' }] }).success).toBe(false);
  });
});
