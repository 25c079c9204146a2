import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePlugin, type KernelApi, type RawConfig, type SvcConfig } from '../../sdk/plugin/index.ts';
import { startKernel, type TestKernel } from '../helpers/kernel.ts';

const echo = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ path: ctx.request?.path ?? null, name: 'echo' }) });\n`;
const fileConfig = (extra = '') => `channel_rest:\n  - { name: from-file, url_path: /file, service: echo, security: none }\n${extra}`;

/** A plugin whose layer adds the channels in `extra` (a test stands in for the admin API). */
function layerPlugin(extra: { channels: Array<Record<string, unknown>> }, seen: SvcConfig[]) {
  const holder: { kernel?: KernelApi } = {};
  const plugin = definePlugin({
    name: 'test-layer',
    kind: 'other',
    version: '1.0.0',
    sdk: '^1.0.0',
    configSchema: z.object({}).default({}),
    setup(kernel) {
      holder.kernel = kernel;
      kernel.addConfigLayer({ name: 'test', apply: (raw) => withChannels(raw, extra.channels) });
    },
    onConfig: (_state, config) => void seen.push(config),
    hooks: {},
  });
  return { plugin, holder };
}

function withChannels(raw: RawConfig, channels: Array<Record<string, unknown>>): RawConfig {
  return { ...raw, channel_rest: [...((raw.channel_rest as unknown[]) ?? []), ...channels] };
}

let k: TestKernel | undefined;
afterEach(async () => {
  await k?.close();
  k = undefined;
});

describe('config layers', () => {
  it('are in force before channels are first built: one build with the layered config', async () => {
    const seen: SvcConfig[] = [];
    const { plugin } = layerPlugin({ channels: [{ name: 'from-layer', url_path: '/layer', service: 'echo', security: 'none' }] }, seen);
    k = await startKernel({ config: fileConfig(), services: { 'echo.ts': echo }, extraPlugins: [plugin] });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.channel_rest.map((c) => c.name)).toEqual(['from-file', 'from-layer']);
    expect((await k.app.inject({ method: 'GET', url: '/layer' })).statusCode).toBe(200);
  });

  it('proposeConfig checks a candidate whole, with paths, and applies nothing', async () => {
    const seen: SvcConfig[] = [];
    const { plugin, holder } = layerPlugin({ channels: [] }, seen);
    k = await startKernel({ config: fileConfig(), services: { 'echo.ts': echo }, extraPlugins: [plugin] });
    const bad = holder.kernel!.proposeConfig({ name: 'test', apply: (raw) => withChannels(raw, [{ name: 'x', url_path: 'no-slash', service: 'echo', security: 'nobody' }]) });
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.issues).toContainEqual({ path: ['channel_rest', 1, 'url_path'], message: 'must start with /' });
    const clash = holder.kernel!.proposeConfig({ name: 'test', apply: (raw) => withChannels(raw, [{ name: 'y', url_path: '/file', service: 'echo', security: 'none' }]) });
    expect(clash.ok).toBe(false);
    if (!clash.ok) expect(clash.issues[0]!.path).toEqual(['channel_rest', 1, 'url_path']);
    const good = holder.kernel!.proposeConfig({ name: 'test', apply: (raw) => withChannels(raw, [{ name: 'y', url_path: '/y', service: 'echo', security: 'none' }]) });
    expect(good.ok).toBe(true);
    expect(seen).toHaveLength(1);
    expect((await k.app.inject({ method: 'GET', url: '/y' })).statusCode).toBe(404);
  });

  it('reapplyConfig installs the layers now, and a file change is recomputed with them', async () => {
    const seen: SvcConfig[] = [];
    const extra = { channels: [] as Array<Record<string, unknown>> };
    const { plugin, holder } = layerPlugin(extra, seen);
    k = await startKernel({ config: fileConfig(), services: { 'echo.ts': echo }, extraPlugins: [plugin] });
    extra.channels = [{ name: 'late', url_path: '/late', service: 'echo', security: 'none' }];
    expect((await holder.kernel!.reapplyConfig('test')).ok).toBe(true);
    expect((await k.app.inject({ method: 'GET', url: '/late' })).statusCode).toBe(200);
    expect(await k.writeConfig(fileConfig('  - { name: second, url_path: /second, service: echo, security: none }\n'))).toBe(true);
    expect((await k.app.inject({ method: 'GET', url: '/late' })).statusCode).toBe(200);
    expect((await k.app.inject({ method: 'GET', url: '/second' })).statusCode).toBe(200);
    expect(holder.kernel!.rawConfig().channel_rest).toHaveLength(3);
    // A file change that clashes with the layer is refused as a whole; the running config stays.
    expect(await k.writeConfig(fileConfig('  - { name: late, url_path: /other, service: echo, security: none }\n'))).toBe(false);
    expect((await k.app.inject({ method: 'GET', url: '/second' })).statusCode).toBe(200);
  });

  it('starts on the file alone, with an error naming the issues, when the layered config does not validate', async () => {
    const logs: Array<Record<string, unknown>> = [];
    const { plugin } = layerPlugin({ channels: [{ name: 'broken', url_path: '/b', service: 'echo', security: 'missing' }] }, []);
    k = await startKernel({ config: fileConfig(), services: { 'echo.ts': echo }, extraPlugins: [plugin], logs });
    expect((await k.app.inject({ method: 'GET', url: '/file' })).statusCode).toBe(200);
    const line = logs.find((l) => String(l.msg).startsWith('config layers not in force'));
    expect(line?.issues).toEqual([expect.stringContaining("channel_rest[1].security: no security definition or group named 'missing'")]);
  });
});
