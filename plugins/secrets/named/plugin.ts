import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { listCommand, setCommand, setControl } from './cli.ts';
import { secretHostCalls } from './host-calls.ts';
import { secretsOf, secretsSectionSchema, validateSecrets } from './schema.ts';
import { NAMED_SECRET_CHANGED, NamedSecretStore, secretStates } from './secret-store.ts';
import { SecretsInUse } from './secrets-in-use.ts';

/**
 * Named secrets for services: values in the vault, used by name through host calls that run in
 * the kernel process (HMAC, verify), never read by a service. See README.md.
 */
export default definePlugin<Record<string, never>, SecretsInUse>({
  name: 'secrets',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.0.0',
  needs: ['secrets.vault'],
  provides: ['secrets.named'],
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { secrets: secretsSectionSchema },
    validateConfig: validateSecrets,
    // A value set with `svc secret set` is in the store, not the file: the admin API shows it as set.
    storedSecrets: [{ section: 'secrets', field: 'value', entries: async (store) => (await secretStates(store)).keys() }],
  },
  setup(kernel) {
    let store: Promise<NamedSecretStore> | undefined;
    // The vault plugin may set up after this one: it is looked up when the first config applies.
    const openStore = () =>
      (store ??= (async () => {
        const vault = kernel.lookup('secrets.vault');
        if (vault === undefined) throw new Error("secrets: no 'secrets.vault' capability");
        return NamedSecretStore.open(kernel.store, vault, () => kernel.clock.now());
      })());
    const secrets = new SecretsInUse(openStore, kernel.log.child({ plugin: 'secrets' }));
    for (const call of secretHostCalls(secrets)) kernel.addHostCall(call);
    kernel.addControl(setControl(secrets));
    kernel.provide('secrets.named', { value: (name) => secrets.valueForPlugin(name) });
    kernel.store.listen(
      NAMED_SECRET_CHANGED,
      (name) => secrets.refresh(name),
      () => secrets.refresh(undefined),
    );
    return secrets;
  },
  onConfig: (secrets, config) => secrets.apply(secretsOf(config)),
  hooks: {},
  cli: [setCommand, listCommand],
});
