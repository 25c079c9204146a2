import { describe, expect, it } from 'vitest';
import { checkPluginShape } from '../../../../kernel/plugin-loader.ts';
import { composeSchema } from '../../../../kernel/config/compose.ts';
import nonePlugin from '../../../../plugins/formats/none/plugin.ts';

const channel = { name: 'raw', url_path: '/raw', service: 'raw', security: 'none', data_format: 'none' };

describe('none plugin schema', () => {
  it('is a well-formed format plugin handling data_format none', () => {
    expect(checkPluginShape(nonePlugin, 'test')).toBe(nonePlugin);
    expect(nonePlugin.kind).toBe('format');
    expect(nonePlugin.contributes?.dataFormats).toEqual(['none']);
  });

  it('has no options and refuses unknown ones', () => {
    expect(nonePlugin.configSchema.safeParse({}).success).toBe(true);
    expect(nonePlugin.configSchema.safeParse({ decode: 'utf8' }).success).toBe(false);
  });

  it('makes none a valid channel data_format', () => {
    const schema = composeSchema([nonePlugin]);
    expect(schema.safeParse({ channel_rest: [channel] }).success).toBe(true);
    expect(schema.safeParse({ channel_rest: [{ ...channel, data_format: 'raw' }] }).success).toBe(false);
  });
});
