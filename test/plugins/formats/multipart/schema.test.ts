import { describe, expect, it } from 'vitest';
import { checkPluginShape } from '../../../../kernel/plugin-loader.ts';
import { composeSchema, crossCheck } from '../../../../kernel/config/compose.ts';
import multipartPlugin, { multipartChannelSchema } from '../../../../plugins/formats/multipart/plugin.ts';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';

const MiB = 1024 * 1024;
const channel = { name: 'upload', url_path: '/upload', service: 'upload', security: 'none', data_format: 'multipart' };

describe('multipart plugin schema', () => {
  it('is a well-formed format plugin handling data_format multipart', () => {
    expect(checkPluginShape(multipartPlugin, 'test')).toBe(multipartPlugin);
    expect(multipartPlugin.contributes?.dataFormats).toEqual(['multipart']);
    expect(multipartPlugin.configSchema.safeParse({ x: 1 }).success).toBe(false);
  });

  it('has sane defaults for every limit', () => {
    expect(multipartChannelSchema.parse({})).toEqual({
      max_file_bytes: 10 * MiB,
      max_files: 10,
      max_fields: 100,
      max_field_bytes: MiB,
      max_total_bytes: 20 * MiB,
    });
  });

  it('refuses negative, fractional and unknown limits', () => {
    for (const bad of [{ max_files: -1 }, { max_file_bytes: 1.5 }, { max_total_bytes: '1MB' }, { max_size: 1 }]) {
      expect(multipartChannelSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });

  it('describes every limit', () => {
    for (const [key, field] of Object.entries(multipartChannelSchema.shape)) expect(field.description, key).toBeTruthy();
  });

  it('adds the multipart key to channels and flags it on other formats', () => {
    const schema = composeSchema([multipartPlugin]);
    const config = schema.parse({ channel_rest: [{ ...channel, multipart: { max_files: 1 } }] }) as SvcConfig;
    expect(config.channel_rest[0]!.multipart).toMatchObject({ max_files: 1, max_file_bytes: 10 * MiB });
    expect(crossCheck(config, [multipartPlugin])).toEqual([]);
    config.channel_rest[0]!.data_format = 'json';
    expect(crossCheck(config, [multipartPlugin])[0]?.message).toBe('multipart settings apply only to channels with data_format: multipart');
  });
});
