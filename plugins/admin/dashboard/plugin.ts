import { readFileSync, readdirSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import type { AdminPage } from '../../capabilities.ts';
import { readSdkTypes } from './sdk-types.ts';

const ASSETS = fileURLToPath(new URL('./assets/', import.meta.url));
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** The Dashboard's files, read once: `/admin/` is index.html, the rest by name. */
function readAssets(): Map<string, AdminPage> {
  const pages = new Map<string, AdminPage>();
  for (const file of readdirSync(ASSETS).sort()) {
    const contentType = TYPES[extname(file)];
    if (!contentType) continue;
    const page = { contentType, body: readFileSync(join(ASSETS, file)) };
    pages.set(file === 'index.html' ? '/admin/' : `/admin/${file}`, page);
  }
  return pages;
}

/**
 * The Dashboard: a web UI on the admin listener, made of a page and a few small scripts with no
 * build step. Its forms and lists are generated from the admin API's catalogue (the plugins' zod
 * schemas as JSON Schema) and its runtime pages from the plugins' operations. See README.md.
 */
export default definePlugin({
  name: 'dashboard',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.0.0',
  configSchema: z.object({}).strict(),
  setup(kernel) {
    const assets = readAssets();
    // The service editor's completions after `ctx.`, from the SDK this server runs.
    assets.set('/admin/sdk-types.json', { contentType: 'application/json; charset=utf-8', body: Buffer.from(JSON.stringify(readSdkTypes())) });
    // Registered once every plugin is set up, whatever order they were set up in. Without the
    // admin plugin there is no admin listener, so nothing to serve: not an error.
    kernel.onListen(async () => {
      const pages = kernel.lookup('admin.pages');
      if (!pages) return void kernel.log.info('dashboard: the admin plugin is disabled, so the Dashboard is not served');
      for (const [path, page] of assets) pages.add(path, page);
    });
  },
  hooks: {},
});
