import { readdirSync, statSync, existsSync } from 'node:fs';
import { join, resolve, isAbsolute } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import semver from 'semver';
import { PLUGIN_SDK_VERSION } from '../sdk/plugin/version.ts';
import { providePluginSdk } from './plugin-sdk-resolve.ts';
import { HOOK_NAMES, isHookName } from './hooks.ts';
import { PLUGIN_KINDS, type Plugin } from './plugin.ts';
import { ConfigError } from './config/store.ts';
import { formatIssue } from './config/compose.ts';
import type { PluginsConfig } from './config/schema.ts';

export const BUNDLED_DIR = fileURLToPath(new URL('../plugins', import.meta.url));

export interface LoadedPlugin {
  plugin: Plugin;
  options: unknown;
}

/** Every `plugin.ts` under plugins/ (three levels at most): bundled plugins are found, never listed. */
export function findBundledPluginFiles(dir = BUNDLED_DIR, depth = 3): string[] {
  if (!existsSync(dir) || depth < 0) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (entry === 'plugin.ts') out.push(path);
    else if (!entry.startsWith('.') && statSync(path).isDirectory()) out.push(...findBundledPluginFiles(path, depth - 1));
  }
  return out;
}

/** Refuses anything that is not a well-formed plugin, naming the plugin and what is wrong. */
export function checkPluginShape(value: unknown, origin: string): Plugin {
  const p = value as Partial<Plugin> | undefined;
  const label = typeof p?.name === 'string' ? `plugin '${p.name}'` : `plugin from ${origin}`;
  const fail = (why: string): never => {
    throw new ConfigError([`${label}: ${why}`]);
  };
  if (!p || typeof p !== 'object') return fail('the module must export default a plugin object');
  if (typeof p.name !== 'string' || !/^[a-z0-9][a-z0-9._-]*$/.test(p.name)) fail('name must be a lower-case identifier');
  if (!PLUGIN_KINDS.includes(p.kind as (typeof PLUGIN_KINDS)[number])) fail(`kind must be one of ${PLUGIN_KINDS.join(', ')}`);
  if (typeof p.version !== 'string') fail('version must be a string');
  if (typeof p.sdk !== 'string' || semver.validRange(p.sdk) === null) fail(`sdk must be the semver range of plugin SDK versions it works with (e.g. '^1.0.0')`);
  if (!semver.satisfies(PLUGIN_SDK_VERSION, p.sdk!)) fail(`is written for plugin SDK ${p.sdk}, and this svc has plugin SDK ${PLUGIN_SDK_VERSION}`);
  for (const key of ['provides', 'needs'] as const) {
    const list = p[key];
    if (list !== undefined && (!Array.isArray(list) || list.some((c) => typeof c !== 'string'))) fail(`${key} must be a list of capability names`);
  }
  if (!p.configSchema || typeof (p.configSchema as { safeParse?: unknown }).safeParse !== 'function') fail('configSchema must be a zod schema');
  if (!p.hooks || typeof p.hooks !== 'object') fail('hooks must be an object');
  for (const [hook, factory] of Object.entries(p.hooks!)) {
    if (!isHookName(hook)) fail(`taps unknown hook '${hook}' (known hooks: ${HOOK_NAMES.join(', ')})`);
    if (typeof factory !== 'function') fail(`hook '${hook}' must be a factory function`);
  }
  return p as Plugin;
}

async function importPlugin(specifier: string, origin: string): Promise<Plugin> {
  const mod = (await import(specifier)) as { default?: unknown };
  return checkPluginShape(mod.default, origin);
}

function resolveModule(module: string, configDir: string): string {
  if (module.startsWith('.') || isAbsolute(module)) return pathToFileURL(isAbsolute(module) ? module : resolve(configDir, module)).href;
  return pathToFileURL(createRequire(join(configDir, 'noop.js')).resolve(module)).href;
}

/**
 * The plugins a config enables: bundled ones unless turned off, plus third-party modules it names.
 * Each plugin's options are checked against its configSchema.
 */
export async function loadPlugins(config: PluginsConfig, configDir: string, bundledFiles = findBundledPluginFiles()): Promise<LoadedPlugin[]> {
  const byName = new Map<string, Plugin>();
  for (const file of bundledFiles) {
    const plugin = await importPlugin(pathToFileURL(file).href, file);
    if (byName.has(plugin.name)) throw new ConfigError([`plugin '${plugin.name}': two bundled plugins share this name`]);
    byName.set(plugin.name, plugin);
  }
  for (const [name, entry] of Object.entries(config)) {
    if (typeof entry === 'object' && entry.module) {
      // A third-party plugin imports `svc/sdk/plugin`: this kernel's SDK, wherever the plugin lives.
      providePluginSdk();
      const plugin = await importPlugin(resolveModule(entry.module, configDir), entry.module);
      if (plugin.name !== name) throw new ConfigError([`plugins.${name}.module: the module's plugin is named '${plugin.name}'`]);
      byName.set(name, plugin);
    } else if (!byName.has(name)) {
      throw new ConfigError([`plugins.${name}: no bundled plugin has this name; name a module to load a third-party plugin`]);
    }
  }
  const loaded: LoadedPlugin[] = [];
  for (const [name, plugin] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    const entry = config[name];
    const enabled = entry === undefined ? true : typeof entry === 'boolean' ? entry : entry.enabled !== false;
    if (!enabled) continue;
    const rawOptions = typeof entry === 'object' ? (entry.config ?? {}) : {};
    const parsed = plugin.configSchema.safeParse(rawOptions);
    if (!parsed.success) {
      throw new ConfigError(parsed.error.issues.map((i) => `plugin '${name}': ${formatIssue({ path: ['plugins', name, 'config', ...i.path], message: i.message })}`));
    }
    loaded.push({ plugin, options: parsed.data });
  }
  checkCapabilities(loaded.map((l) => l.plugin), [...byName.values()]);
  return loaded;
}

/**
 * Every capability an enabled plugin needs is provided by an enabled plugin. The refusal names
 * both plugins: the one that needs it and the one that would provide it (disabled, or unknown).
 */
export function checkCapabilities(enabled: readonly Plugin[], known: readonly Plugin[]): void {
  const provided = new Set(enabled.flatMap((p) => p.provides ?? []));
  const problems: string[] = [];
  for (const p of enabled) {
    for (const c of p.needs ?? []) {
      if (provided.has(c)) continue;
      const offstage = known.find((k) => k.provides?.includes(c));
      problems.push(
        offstage
          ? `plugin '${p.name}' needs capability '${c}', which plugin '${offstage.name}' provides, but '${offstage.name}' is disabled`
          : `plugin '${p.name}' needs capability '${c}', which no known plugin provides`,
      );
    }
  }
  if (problems.length) throw new ConfigError(problems);
}
