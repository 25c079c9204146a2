import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { DataStore } from '../../../../sdk/plugin/store.ts';
import { openTestStore, testStoreKind } from '../../../helpers/store.ts';
import { loadVaultKey, KEY_FILE } from '../../../../plugins/secrets/shared/vault-key.ts';
import { SqlVault } from '../../../../plugins/secrets/shared/sql-vault.ts';

const stores: DataStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'svc-vault-'));
}

async function storeIn(dir: string): Promise<DataStore> {
  const store = await openTestStore(join(dir, 'svc.db'));
  stores.push(store);
  return store;
}

describe('vault key', () => {
  it('is created owner-only in the data directory on first use, and read back after', () => {
    const dir = tempDir();
    const key = loadVaultKey(dir, {});
    expect(key).toHaveLength(32);
    expect(statSync(join(dir, KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(loadVaultKey(dir, {}).equals(key)).toBe(true);
  });

  it('comes from SVC_VAULT_KEY when set, which must be 32 bytes', () => {
    const raw = randomBytes(32);
    expect(loadVaultKey(tempDir(), { SVC_VAULT_KEY: raw.toString('base64') }).equals(raw)).toBe(true);
    expect(() => loadVaultKey(tempDir(), { SVC_VAULT_KEY: 'c2hvcnQ=' })).toThrow(/32 bytes/);
  });
});

describe('vault', () => {
  it('keeps values encrypted across restarts, by owner and name', async () => {
    const dir = tempDir();
    const key = loadVaultKey(dir, {});
    const vault = await SqlVault.open(await storeIn(dir), key, () => 1);
    await vault.put('security', 'crm', 'p4ssw0rd-for-crm');
    await vault.put('secrets', 'crm', 'another value');
    expect(await vault.names('security')).toEqual(['crm']);
    await stores[0]!.close();
    stores.length = 0;

    if (testStoreKind() === 'sqlite') expect(readFileSync(join(dir, 'svc.db')).includes(Buffer.from('p4ssw0rd-for-crm'))).toBe(false);

    const again = await SqlVault.open(await storeIn(dir), key, () => 2);
    expect(await again.get('security', 'crm')).toBe('p4ssw0rd-for-crm');
    expect(await again.get('secrets', 'crm')).toBe('another value');
    expect(await again.get('security', 'nope')).toBeUndefined();
    await again.delete('security', 'crm');
    expect(await again.get('security', 'crm')).toBeUndefined();
  });

  it('refuses another key, and a row copied onto another name', async () => {
    const dir = tempDir();
    const store = await storeIn(dir);
    const vault = await SqlVault.open(store, loadVaultKey(dir, {}), () => 1);
    await vault.put('security', 'a', 'value-a');
    const wrongKey = await SqlVault.open(store, randomBytes(32), () => 1);
    await expect(wrongKey.get('security', 'a')).rejects.toThrow(/cannot be decrypted/);
    await store.run("INSERT INTO vault_secret (owner, name, nonce, box, updated_at) SELECT owner, 'b', nonce, box, updated_at FROM vault_secret WHERE name = 'a'");
    const fresh = await SqlVault.open(store, loadVaultKey(dir, {}), () => 1);
    await expect(fresh.get('security', 'b')).rejects.toThrow(/cannot be decrypted/);
    expect(await fresh.get('security', 'a')).toBe('value-a');
  });
});
