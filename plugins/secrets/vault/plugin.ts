import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { loadVaultKey } from '../shared/vault-key.ts';
import { SqlVault } from '../shared/sql-vault.ts';

/**
 * The vault: secrets svc must use rather than only verify (outgoing credentials, signing keys for
 * services), encrypted at rest with a key kept outside the database. See README.md.
 */
export default definePlugin<Record<string, never>, undefined>({
  name: 'vault',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.0.0',
  provides: ['secrets.vault'],
  configSchema: z.object({}).strict().default({}),
  async setup(kernel) {
    const key = loadVaultKey(kernel.dataDir, kernel.env);
    const vault = await SqlVault.open(kernel.store, key, () => kernel.clock.now());
    vault.followChanges();
    kernel.provide('secrets.vault', vault);
    return undefined;
  },
  hooks: {},
});
