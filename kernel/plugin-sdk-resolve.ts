import { register } from 'node:module';

/** The specifier third-party plugins import the plugin SDK by. */
export const PLUGIN_SDK_SPECIFIER = 'svc/sdk/plugin';
/** The running kernel's own SDK entry: the file every plugin must get, so `instanceof SvcError` holds. */
export const PLUGIN_SDK_URL = new URL('../sdk/plugin/index.ts', import.meta.url).href;

let registered = false;

/**
 * Makes `import … from 'svc/sdk/plugin'` resolve, from any file in this process, to this
 * kernel's SDK entry. Node resolves a bare specifier by walking up from the importing file's
 * real path; a plugin that is its own package (a package.json of its own, installed by a
 * symlink, or under a project whose node_modules holds no svc or another copy of it) would
 * otherwise find no SDK, or a second one whose SvcError the kernel does not recognise.
 * A module resolve hook (node:module register), once per process, before third-party plugins load.
 * Test runners that resolve modules themselves (vitest) need the same mapping as an alias.
 */
export function providePluginSdk(): void {
  if (registered) return;
  registered = true;
  const hook =
    `export async function resolve(specifier, context, next) {` +
    ` return specifier === ${JSON.stringify(PLUGIN_SDK_SPECIFIER)} ? { url: ${JSON.stringify(PLUGIN_SDK_URL)}, shortCircuit: true } : next(specifier, context); }`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
}
