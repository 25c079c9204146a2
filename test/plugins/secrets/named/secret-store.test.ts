import { mkdtempSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DataStore } from '../../../../sdk/plugin/store.ts';
import { openTestStore } from '../../../helpers/store.ts';
import { NamedSecretStore, secretStates } from '../../../../plugins/secrets/named/secret-store.ts';
import { SqlVault } from '../../../../plugins/secrets/shared/sql-vault.ts';

const stores: DataStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

const KEY = randomBytes(32);

/** A store over a fresh vault instance each time, as a restart (or the CLI's own process) would open it. */
async function open(dir: string, key = KEY, now = 1): Promise<{ secrets: NamedSecretStore; store: DataStore }> {
  const store = await openTestStore(join(dir, 'svc.db'));
  stores.push(store);
  const vault = await SqlVault.open(store, key, () => now);
  return { secrets: await NamedSecretStore.open(store, vault, () => now), store };
}

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-named-'));

describe('named secret precedence: the latest change wins', () => {
  it('applies a config value, keeps it while unchanged, and forgets a secret that leaves the config', async () => {
    const dir = tempDir();
    const { secrets, store } = await open(dir);
    expect(await secrets.apply([{ name: 'a', value: 'v1' }, { name: 'b' }])).toEqual(new Map([['a', 'new'], ['b', 'unset']]));
    expect(await secrets.value('a')).toBe('v1');
    expect(await secrets.apply([{ name: 'a', value: 'v1' }])).toEqual(new Map([['a', 'kept']]));
    expect([...(await secretStates(store)).entries()]).toEqual([['a', { source: 'config', updatedAt: 1 }]]);
    await secrets.apply([]);
    expect(await secrets.value('a')).toBeUndefined();
    expect(await secrets.apply([{ name: 'a' }])).toEqual(new Map([['a', 'unset']]));
  });

  it('keeps a CLI value across reloads and restarts until the config value is edited', async () => {
    const dir = tempDir();
    const first = await open(dir);
    await first.secrets.apply([{ name: 'a', value: 'from-config' }]);
    await first.secrets.setFromCli('a', 'from-cli', 'from-config');
    expect(await first.secrets.apply([{ name: 'a', value: 'from-config' }])).toEqual(new Map([['a', 'kept']]));
    expect(await first.secrets.value('a')).toBe('from-cli');

    const restarted = await open(dir, KEY, 2);
    expect(await restarted.secrets.apply([{ name: 'a', value: 'from-config' }])).toEqual(new Map([['a', 'kept']]));
    expect(await restarted.secrets.value('a')).toBe('from-cli');
    expect((await secretStates(restarted.store)).get('a')?.source).toBe('cli');

    expect(await restarted.secrets.apply([{ name: 'a', value: 'edited' }])).toEqual(new Map([['a', 'edited']]));
    expect(await restarted.secrets.value('a')).toBe('edited');
    expect((await secretStates(restarted.store)).get('a')).toEqual({ source: 'config', updatedAt: 2 });
  });

  it('counts a config edit made before the CLI ran as seen: the CLI value stays', async () => {
    const { secrets } = await open(tempDir());
    await secrets.apply([{ name: 'a', value: 'v1' }]);
    // The file now says v2 (not applied yet); the CLI ran after that edit and acknowledged it.
    await secrets.setFromCli('a', 'from-cli', 'v2');
    expect(await secrets.apply([{ name: 'a', value: 'v2' }])).toEqual(new Map([['a', 'kept']]));
    expect(await secrets.value('a')).toBe('from-cli');
  });

  it('lets a config value added after a CLI value take over, and keeps the value when the config drops it', async () => {
    const { secrets } = await open(tempDir());
    await secrets.apply([{ name: 'a' }]);
    await secrets.setFromCli('a', 'from-cli', undefined);
    expect(await secrets.apply([{ name: 'a' }])).toEqual(new Map([['a', 'kept']]));
    expect(await secrets.apply([{ name: 'a', value: 'added' }])).toEqual(new Map([['a', 'edited']]));
    expect(await secrets.value('a')).toBe('added');
    expect(await secrets.apply([{ name: 'a' }])).toEqual(new Map([['a', 'kept']]));
    expect(await secrets.value('a')).toBe('added');
  });

  it('replaces values sealed under another vault key with the config value, where there is one', async () => {
    const dir = tempDir();
    const before = await open(dir);
    await before.secrets.apply([{ name: 'a', value: 'v1' }, { name: 'b', value: 'v1' }]);
    const otherKey = await open(dir, randomBytes(32));
    expect(await otherKey.secrets.apply([{ name: 'a', value: 'v1' }, { name: 'b' }])).toEqual(new Map([['a', 'edited'], ['b', 'kept']]));
    expect(await otherKey.secrets.value('a')).toBe('v1');
    await expect(otherKey.secrets.value('b')).rejects.toThrow(/cannot be decrypted/);
  });
});
