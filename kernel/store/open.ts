import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Plugin } from '../plugin.ts';
import type { DataStore } from '../../sdk/plugin/store.ts';
import { redactStoreUrl } from '../../sdk/plugin/store.ts';
import { ConfigError } from '../../sdk/plugin/config-source.ts';
import { formatIssue } from '../config/compose.ts';
import { SqliteStore } from './sqlite.ts';
import { sqliteDriver } from './sqlite-driver.ts';

/** The SQLite file under data_dir when `server.store` is absent. */
const SQLITE_FILE = 'svc.db';
const URL_SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

/** The SQLite file `server.store` names (svc.db under data_dir when it is absent), as given; undefined: a URL, another store's. */
export function sqliteFileOf(store: string | undefined, dataDir: string): string | undefined {
  if (store === undefined) return join(dataDir, SQLITE_FILE);
  return URL_SCHEME.test(store) ? undefined : store;
}

/**
 * The data store `server.store` names (SVC_STORE applied already): the SQLite file by default,
 * or the store of the enabled plugin whose strategy claims the URL's scheme. The kernel knows
 * SQLite only: it is the default and needs no plugin; every other store is a plugin's.
 */
export async function openStore(store: string | undefined, dataDir: string, plugins: readonly Plugin[], log: Logger): Promise<DataStore> {
  const scheme = store === undefined ? undefined : URL_SCHEME.exec(store)?.[1]?.toLowerCase();
  if (store === undefined || scheme === undefined) {
    // A node_modules built for another Node is a clear error here, before anything is opened.
    sqliteDriver();
    return new SqliteStore(store ?? join(dataDir, SQLITE_FILE));
  }
  const owner = plugins.find((p) => p.contributes?.dataStore?.schemes.includes(scheme));
  const strategy = owner?.contributes?.dataStore;
  if (!strategy) {
    const known = plugins.flatMap((p) => p.contributes?.dataStore?.schemes ?? []);
    const offer = known.length ? `enabled store plugins open ${known.map((s) => `${s}://`).join(', ')}` : 'no enabled plugin opens stores (is the postgres plugin disabled?)';
    throw new ConfigError([formatIssue({ path: ['server', 'store'], message: `no store for ${scheme}:// URLs (${redactStoreUrl(store)}): ${offer}` })]);
  }
  return strategy.open(store, { log: log.child({ store: owner.name }) });
}
