import { createRequire } from 'node:module';

/**
 * A client library loaded at its first use, not when the plugin is imported. Every bundled plugin
 * is imported by every `svc` command and server start, so a driver imported at the top of a
 * plugin (mysql2, mqtt, amqplib, the mail clients: hundreds of modules) is paid for by servers
 * whose config never names it. `moduleUrl` is the caller's `import.meta.url`: the library resolves
 * from the plugin's own folder. The library must be loadable with `require` (CommonJS, or ESM
 * without top-level await on Node ≥ 20.19); the module object returned is what `import * as`
 * would give for CommonJS (its `module.exports`). SDK 1.14.
 */
export function onFirstUse<T>(moduleUrl: string, specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= createRequire(moduleUrl)(specifier) as T;
    return loaded;
  };
}
