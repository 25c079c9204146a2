import { afterEach, describe, expect, it } from 'vitest';
import { checkLogin, keyOwner, newKey } from '../../../../plugins/admin/api/credential.ts';
import { migrateAdmin } from '../../../../plugins/admin/api/store.ts';
import { hashSecret, type DataStore } from '../../../../sdk/plugin/index.ts';
import { openTestStore } from '../../../helpers/store.ts';

/** The admin tables of a store made before roles: its account and keys stay platform administrators. */

let store: DataStore | undefined;
afterEach(async () => store?.close());

/** The first migration as it shipped before roles and tenants (version 1 of owner `admin`). */
const V1 = `CREATE TABLE admin_user (username TEXT PRIMARY KEY, password_hash TEXT NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE admin_key (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, digest TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE admin_override (section TEXT NOT NULL, name TEXT NOT NULL, action TEXT NOT NULL, entry TEXT, updated_at INTEGER NOT NULL, updated_by TEXT NOT NULL, PRIMARY KEY (section, name));
CREATE TABLE admin_audit (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL, section TEXT, name TEXT, detail TEXT)`;

describe('admin store migration to roles', () => {
  it('keeps the admin account and old keys, as platform administrators', async () => {
    store = await openTestStore();
    await store.migrate('admin', [{ version: 1, up: V1 }]);
    const key = newKey();
    await store.run('INSERT INTO admin_user (username, password_hash, updated_at) VALUES (?, ?, ?)', ['admin', await hashSecret('old-password'), 1]);
    await store.run('INSERT INTO admin_key (id, name, digest, created_at) VALUES (?, ?, ?, ?)', [key.id, 'ci', key.digest, 1]);
    await migrateAdmin(store);
    expect(await checkLogin(store, 'admin', 'old-password', () => hashSecret('x'))).toEqual({ name: 'admin', role: 'platform', tenant: undefined });
    expect(await keyOwner(store, key.key)).toEqual({ name: 'ci', role: 'platform', tenant: undefined });
    expect(await checkLogin(store, 'admin', 'wrong-password', () => hashSecret('x'))).toBeUndefined();
  });
});
