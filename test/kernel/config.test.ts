import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ConfigError, readSource, validate } from '../../kernel/config/store.ts';
import { loadConfig } from '../../kernel/kernel.ts';
import { checkCapabilities, checkPluginShape, findBundledPluginFiles, loadPlugins } from '../../kernel/plugin-loader.ts';
import { definePlugin, type Plugin } from '../../kernel/plugin.ts';
import { PLUGIN_SDK_VERSION } from '../../sdk/plugin/version.ts';
import type { Exchange } from '../../sdk/plugin/exchange.ts';

const json = (await import('../../plugins/formats/json/plugin.ts')).default;
const none = (await import('../../plugins/formats/none/plugin.ts')).default;
const plugins = [json, none];

function issuesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  return [];
}

const channel = (extra: Record<string, unknown> = {}) => ({ name: 'c', url_path: '/c', service: 's', security: 'none', ...extra });

describe('config schema', () => {
  it('fills server defaults', () => {
    const cfg = validate({}, plugins, {});
    expect(cfg.server).toMatchObject({ host: '127.0.0.1', port: 17010, data_dir: './data', services_dir: './services', timezone: 'UTC' });
    expect(cfg.channel_rest).toEqual([]);
  });

  it('SVC_PORT overrides the port', () => {
    expect(validate({}, plugins, { SVC_PORT: '18000' }).server.port).toBe(18000);
    expect(issuesOf(() => validate({}, plugins, { SVC_PORT: 'x' }))[0]).toMatch(/SVC_PORT/);
  });

  it('names the YAML path of a bad value', () => {
    const issues = issuesOf(() => validate({ channel_rest: [channel(), channel({ name: 'd' }), channel({ name: 'e', url_path: 'no-slash' })] }, plugins, {}));
    expect(issues).toEqual(['channel_rest[2].url_path: must start with /']);
  });

  it('refuses unknown top-level keys and unknown channel keys', () => {
    expect(issuesOf(() => validate({ chanel_rest: [] }, plugins, {})).join()).toMatch(/chanel_rest/);
    expect(issuesOf(() => validate({ channel_rest: [channel({ colour: 'red' })] }, plugins, {})).join()).toMatch(/channel_rest\[0\].*colour/);
  });

  it('requires an explicit security choice on a channel', () => {
    const { security: _dropped, ...noSecurity } = channel();
    expect(issuesOf(() => validate({ channel_rest: [noSecurity] }, plugins, {})).join()).toMatch(/channel_rest\[0\]\.security: required/);
  });

  it('refuses a security name that does not exist', () => {
    expect(issuesOf(() => validate({ channel_rest: [channel({ security: 'ghost' })] }, plugins, {}))).toEqual([
      "channel_rest[0].security: no security definition or group named 'ghost' (use 'none' for no server-side authentication)",
    ]);
  });

  it('refuses a data format no enabled plugin handles', () => {
    expect(issuesOf(() => validate({ channel_rest: [channel({ data_format: 'yaml' })] }, plugins, {})).join()).toMatch(/no enabled plugin handles data format 'yaml'/);
  });

  it('refuses sections whose plugin is not enabled', () => {
    expect(issuesOf(() => validate({ pubsub_topic: [{ name: '/t' }] }, plugins, {})).join()).toMatch(/pubsub_topic: no enabled plugin handles 'pubsub_topic'/);
  });

  it('refuses duplicate channel names and bad enum values', () => {
    expect(issuesOf(() => validate({ channel_rest: [channel(), channel()] }, plugins, {})).join()).toMatch(/duplicate channel name 'c'/);
    expect(issuesOf(() => validate({ channel_rest: [channel({ params_pri: 'whatever' })] }, plugins, {})).join()).toMatch(/channel_rest\[0\]\.params_pri/);
    expect(issuesOf(() => validate({ channel_rest: [channel({ method: 'FETCH' })] }, plugins, {})).join()).toMatch(/channel_rest\[0\]\.method/);
  });

  it('refuses a timezone that is not IANA', () => {
    expect(issuesOf(() => validate({ server: { timezone: 'Mars/Olympus' } }, plugins, {})).join()).toMatch(/server\.timezone/);
  });
});

describe('environment substitution', () => {
  it('replaces ${NAME} from the environment', () => {
    expect(readSource('server:\n  host: ${HOST_X}\n', { HOST_X: '0.0.0.0' })).toEqual({ server: { host: '0.0.0.0' } });
  });

  it('a missing variable is an error naming the path, not an empty string', () => {
    expect(issuesOf(() => readSource('security:\n  - password: ${NOPE}\n', {}))).toEqual(['security[0].password: environment variable NOPE is not set']);
  });

  it('reports YAML syntax errors', () => {
    expect(issuesOf(() => readSource('a: [1, 2\n', {}))[0]).toMatch(/^YAML:/);
  });
});

describe('plugin loading', () => {
  it('finds bundled plugins by their plugin.ts files', () => {
    const files = findBundledPluginFiles();
    expect(files.some((f) => f.endsWith('formats/json/plugin.ts'))).toBe(true);
  });

  it('refuses a plugin that taps an unknown hook, naming plugin and hook', () => {
    const bad = { ...json, name: 'bad', hooks: { beforeEverything: () => undefined } };
    expect(() => checkPluginShape(bad, 'test')).toThrow("plugin 'bad': taps unknown hook 'beforeEverything'");
  });

  it('refuses a plugin written for another plugin SDK, naming both versions', () => {
    const future = { ...json, name: 'future', sdk: '^2.0.0' };
    expect(() => checkPluginShape(future, 'test')).toThrow(`plugin 'future': is written for plugin SDK ^2.0.0, and this svc has plugin SDK ${PLUGIN_SDK_VERSION}`);
    expect(() => checkPluginShape({ ...json, name: 'nosdk', sdk: undefined }, 'test')).toThrow(/plugin 'nosdk': sdk must be the semver range/);
    expect(() => checkPluginShape({ ...json, name: 'junk', sdk: 'soon' }, 'test')).toThrow(/plugin 'junk': sdk must be the semver range/);
    expect(checkPluginShape({ ...json, name: 'range', sdk: '>=1.0.0 <2' }, 'test').name).toBe('range');
  });

  it('refuses a plugin whose needed capability no enabled plugin provides, naming both plugins', async () => {
    const needy = { ...json, name: 'needy', needs: ['pubsub.engine'] } as unknown as Plugin;
    const engine = { ...json, name: 'engine', provides: ['pubsub.engine'] } as unknown as Plugin;
    expect(() => checkCapabilities([needy], [needy, engine])).toThrow("plugin 'needy' needs capability 'pubsub.engine', which plugin 'engine' provides, but 'engine' is disabled");
    expect(() => checkCapabilities([needy], [needy])).toThrow("plugin 'needy' needs capability 'pubsub.engine', which no known plugin provides");
    expect(() => checkCapabilities([needy, engine], [needy, engine])).not.toThrow();
    // The bundled ones, as a user switches them: variant A without the engine is refused at load.
    await expect(loadPlugins({ pubsub: false }, tmpdir())).rejects.toThrow("plugin 'pubsub-rest-a' needs capability 'pubsub.engine', which plugin 'pubsub' provides, but 'pubsub' is disabled");
  });

  it('refuses malformed plugins', () => {
    expect(() => checkPluginShape({ name: 'x', kind: 'weird', version: '1', sdk: '^1.0.0', configSchema: z.object({}), hooks: {} }, 't')).toThrow(/kind must be one of/);
    expect(() => checkPluginShape(undefined, 'mod.js')).toThrow(/plugin from mod.js/);
  });

  it('refuses plugin options that fail the plugin schema, naming plugin and field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-plugin-'));
    writeFileSync(
      join(dir, 'my-plugin.ts'),
      `import { z } from 'zod';\nexport default { name: 'my-plugin', kind: 'other', version: '1.0.0', sdk: '^1.0.0', configSchema: z.object({ limit: z.number().int() }).strict(), hooks: {} };\n`,
    );
    await expect(loadPlugins({ 'my-plugin': { enabled: true, module: './my-plugin.ts', config: { limit: 'ten' } } }, dir, [])).rejects.toThrow(
      /plugin 'my-plugin': plugins\.my-plugin\.config\.limit: /,
    );
    const loaded = await loadPlugins({ 'my-plugin': { enabled: true, module: './my-plugin.ts', config: { limit: 10 } } }, dir, []);
    expect(loaded.map((l) => [l.plugin.name, l.options])).toEqual([['my-plugin', { limit: 10 }]]);
  });

  it('disables bundled plugins by name and refuses unknown names', async () => {
    const files = findBundledPluginFiles().filter((f) => f.includes('/formats/json/') || f.includes('/formats/none/'));
    const loaded = await loadPlugins({ none: false }, '.', files);
    expect(loaded.map((l) => l.plugin.name)).toEqual(['json']);
    await expect(loadPlugins({ nosuch: true }, '.', files)).rejects.toThrow(/plugins\.nosuch: no bundled plugin/);
  });

  it('loads a third-party plugin written only against the kernel contract', async () => {
    const plugin = definePlugin({
      name: 'stamp',
      kind: 'other',
      version: '1.0.0', sdk: '^1.0.0',
      configSchema: z.object({}),
      hooks: { serialize: () => (ex: Exchange) => void (ex.response.headers['x-stamp'] = 'yes') },
    });
    expect(checkPluginShape(plugin, 'inline')).toBe(plugin);
  });

  it('loadConfig stops on a config error with every message', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-cfg-'));
    const file = join(dir, 'svc.yaml');
    writeFileSync(file, 'server:\n  port: -1\nchannel_rest:\n  - { name: a, url_path: x, service: s, security: none }\n');
    await expect(loadConfig(file, {})).rejects.toSatisfy((e: ConfigError) => e.issues.length === 2 && e.issues.some((i) => i.startsWith('server.port')));
  });
});

describe('config errors never copy source lines', () => {
  it('reports a YAML syntax error by line and column only (the line may hold a secret)', () => {
    const issues = issuesOf(() => readSource('server:\n  password: s3cr3t-value: x\n', {}));
    expect(issues).toEqual(['YAML: Nested mappings are not allowed in compact mappings at line 2, column 13']);
    expect(issues.join()).not.toContain('s3cr3t');
  });
});

describe('what plugins contribute to the config', () => {
  it('a channel key no enabled plugin contributes is refused, naming it (use_queue without the use-queue plugin)', () => {
    expect(issuesOf(() => validate({ channel_rest: [channel({ use_queue: true })] }, plugins, {}))).toEqual([
      "channel_rest[0].use_queue: no enabled plugin handles 'use_queue' (misspelt, or its plugin is not enabled)",
    ]);
  });

  const sectionPlugin = (name: string, section: string) =>
    definePlugin({ name, kind: 'other', version: '1.0.0', sdk: '^1.0.0', configSchema: z.object({}), contributes: { sections: { [section]: z.array(z.object({ name: z.string() }).strict()).default([]) } }, hooks: {} });

  it('a section exists while its plugin is enabled, validated by its schema', () => {
    const withSection = [...plugins, sectionPlugin('queues', 'queue_def')];
    expect((validate({ queue_def: [{ name: 'q' }] }, withSection, {}) as unknown as Record<string, unknown>).queue_def).toEqual([{ name: 'q' }]);
    expect((validate({}, withSection, {}) as unknown as Record<string, unknown>).queue_def).toEqual([]);
    expect(issuesOf(() => validate({ queue_def: [{ name: 'q', x: 1 }] }, withSection, {}))).toEqual(['queue_def[0].x: unknown key']);
    expect(issuesOf(() => validate({ queue_def: [] }, plugins, {}))).toEqual(["queue_def: no enabled plugin handles 'queue_def' (misspelt, or its plugin is not enabled)"]);
  });

  it('two owners of one section, or a plugin claiming a kernel section, are refused naming both', () => {
    expect(issuesOf(() => validate({}, [...plugins, sectionPlugin('one', 'shared'), sectionPlugin('two', 'shared')], {}))).toEqual([
      "plugin 'two' contributes the top-level section 'shared', which plugin 'one' already owns",
    ]);
    expect(issuesOf(() => validate({}, [...plugins, sectionPlugin('greedy', 'channel_rest')], {}))).toEqual([
      "plugin 'greedy' contributes the top-level section 'channel_rest', which the kernel already owns",
    ]);
  });

  it('the default data format comes from the plugin that claims it; without one, channels must name theirs', () => {
    expect(validate({ channel_rest: [channel()] }, plugins, {}).channel_rest[0]!.data_format).toBe('json');
    expect(issuesOf(() => validate({ channel_rest: [channel()] }, [none], {})).join()).toMatch(/channel_rest\[0\]\.data_format/);
    expect(validate({ channel_rest: [channel({ data_format: 'none' })] }, [none], {}).channel_rest[0]!.data_format).toBe('none');
    const rival = definePlugin({ ...json, name: 'json-too' });
    expect(issuesOf(() => validate({}, [json, rival], {}))).toEqual(["plugins 'json' and 'json-too' both make their format the default data format; disable one"]);
  });
});
