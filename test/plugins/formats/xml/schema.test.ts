import { describe, expect, it } from 'vitest';
import { checkPluginShape } from '../../../../kernel/plugin-loader.ts';
import { composeSchema, crossCheck } from '../../../../kernel/config/compose.ts';
import xmlPlugin, { xmlChannelSchema } from '../../../../plugins/formats/xml/plugin.ts';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';

const channel = { name: 'orders', url_path: '/orders', service: 'orders', security: 'none', data_format: 'xml' };

describe('xml plugin schema', () => {
  it('is a well-formed format plugin handling data_format xml', () => {
    expect(checkPluginShape(xmlPlugin, 'test')).toBe(xmlPlugin);
    expect(xmlPlugin.kind).toBe('format');
    expect(xmlPlugin.contributes?.dataFormats).toEqual(['xml']);
  });

  it('defaults its options and bounds them', () => {
    expect(xmlPlugin.configSchema.parse({})).toEqual({ max_depth: 100, max_entity_references: 10_000 });
    expect(xmlPlugin.configSchema.safeParse({ max_depth: 0 }).success).toBe(false);
    expect(xmlPlugin.configSchema.safeParse({ max_entity_references: -1 }).success).toBe(false);
    expect(xmlPlugin.configSchema.safeParse({ allow_doctype: true }).success).toBe(false);
  });

  it('accepts always_array paths and refuses malformed ones', () => {
    expect(xmlChannelSchema.parse({})).toEqual({ always_array: [] });
    expect(xmlChannelSchema.parse({ always_array: ['lines.line', '..tag', 's:Body.m:Item'] }).always_array).toHaveLength(3);
    for (const bad of ['', 'a..b', 'a.', '.a', 'a b', '...a']) expect(xmlChannelSchema.safeParse({ always_array: [bad] }).success, bad).toBe(false);
    expect(xmlChannelSchema.safeParse({ arrays: [] }).success).toBe(false);
  });

  it('adds the xml key to channels', () => {
    const schema = composeSchema([xmlPlugin]);
    const parsed = schema.safeParse({ channel_rest: [{ ...channel, xml: { always_array: ['line'] } }] });
    expect(parsed.success).toBe(true);
    expect(schema.safeParse({ channel_rest: [{ ...channel, xml: { always_array: 'line' } }] }).success).toBe(false);
  });

  it('flags xml settings on a channel of another format', () => {
    const schema = composeSchema([xmlPlugin]);
    const config = schema.parse({ channel_rest: [{ ...channel, data_format: 'xml', xml: {} }] }) as SvcConfig;
    expect(crossCheck(config, [xmlPlugin])).toEqual([]);
    config.channel_rest[0]!.data_format = 'json';
    expect(crossCheck(config, [xmlPlugin])).toEqual([{ path: ['channel_rest', 0, 'xml'], message: 'xml settings apply only to channels with data_format: xml' }]);
  });
});
