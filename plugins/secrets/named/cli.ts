import { resolve } from 'node:path';
import { z } from 'zod';
import type { CliCommand, CliEnv, ControlOp } from '../../../sdk/plugin/index.ts';
import { SqlVault } from '../shared/sql-vault.ts';
import { KEY_ENV, loadVaultKey } from '../shared/vault-key.ts';
import { secretNameSchema, secretsOf, secretValueSchema, type NamedSecret } from './schema.ts';
import { NamedSecretStore, secretStates, type SecretState } from './secret-store.ts';
import type { SecretsInUse } from './secrets-in-use.ts';

const SET_OP = 'secrets.set';
const SET_USAGE = 'secret set NAME';

/**
 * The value itself crosses the control socket (owner-only, local): it must be stored encrypted
 * with the server's vault key, which may live only in the server's environment. configValue is
 * the config file's value when the CLI ran (null: none), so it does not later count as an edit.
 */
export const setArgs = z
  .object({
    name: secretNameSchema,
    value: secretValueSchema,
    configValue: secretValueSchema.nullable(),
  })
  .strict();

export function setControl(secrets: SecretsInUse): ControlOp<z.infer<typeof setArgs>> {
  return {
    op: SET_OP,
    args: setArgs,
    handler: async ({ name, value, configValue }) => {
      await secrets.setFromCli(name, value, configValue ?? undefined);
      return { secret: name };
    },
  };
}

export const setCommand: CliCommand = {
  words: ['secret', 'set'],
  usage: SET_USAGE,
  describe:
    'Sets the value of named secret NAME, read from standard input (never from the command line); stored encrypted, used at once when the server runs.',
  run: async (args, env) => {
    const name = args[0];
    if (args.length !== 1 || name === undefined || name.startsWith('-')) {
      env.err(`the secret's name, and nothing else: its value is read from standard input, never from arguments\nusage: svc ${SET_USAGE}`);
      return 2;
    }
    const entry = secretsOf(env.config).find((s) => s.name === name);
    if (entry === undefined) {
      env.err(`no secret named '${name}' in ${env.configPath} (add it under secrets:)`);
      return 2;
    }
    const value = await readValue(env);
    if (value === undefined) return 2;
    const reply = await env.control(SET_OP, { name, value, configValue: entry.value ?? null });
    if (reply !== undefined) {
      if (!reply.ok) {
        env.err(`the running server refused: ${reply.error ?? 'unknown error'}`);
        return 1;
      }
      env.out(`value of secret '${name}' changed; the running server uses it now`);
      return 0;
    }
    return storeOffline(env, entry, value);
  },
};

/** No server runs: the CLI seals the value with the vault key itself, as the server would. */
async function storeOffline(env: CliEnv, entry: NamedSecret, value: string): Promise<number> {
  const store = await env.openStore();
  try {
    // The data directory as the kernel resolves it (relative to the working directory).
    const vault = await SqlVault.open(store, loadVaultKey(resolve(env.config.server.data_dir), process.env), Date.now);
    if (!(await vault.opensExistingRows())) {
      env.err(`the vault key here does not open the secrets already stored: run this with the server's ${KEY_ENV}, or start the server and run it again`);
      return 1;
    }
    await (await NamedSecretStore.open(store, vault, Date.now)).setFromCli(entry.name, value, entry.value);
  } finally {
    await store.close();
  }
  env.out(`value of secret '${entry.name}' stored encrypted; no server is running, it is used when one starts`);
  return 0;
}

/** One trailing line break is dropped (echo, editors); anything else is part of the value. */
async function readValue(env: CliEnv): Promise<string | undefined> {
  let text: string;
  try {
    text = await env.readStdin();
  } catch (err) {
    env.err(`cannot read the value from standard input: ${(err as Error).message}`);
    return undefined;
  }
  const checked = secretValueSchema.safeParse(text.replace(/\r?\n$/, ''));
  if (!checked.success) {
    env.err(`the value ${checked.error.issues[0]?.message ?? 'is not valid'}`);
    return undefined;
  }
  return checked.data;
}

export const listCommand: CliCommand = {
  words: ['secret', 'list'],
  usage: 'secret list',
  describe: 'Lists the named secrets of the config: where each value comes from and which services may use it (never the values).',
  run: async (_args, env) => {
    const secrets = secretsOf(env.config);
    if (secrets.length === 0) {
      env.out(`no secrets in ${env.configPath}`);
      return 0;
    }
    const store = await env.openStore();
    let states: Map<string, SecretState>;
    try {
      states = await secretStates(store);
    } finally {
      await store.close();
    }
    const width = Math.max(...secrets.map((s) => s.name.length));
    for (const entry of secrets) {
      const services = entry.services.length ? entry.services.join(', ') : 'none';
      env.out(`${entry.name.padEnd(width)}  ${sourceOf(entry, states.get(entry.name))}; services: ${services}`);
    }
    return 0;
  },
};

function sourceOf(entry: NamedSecret, state: SecretState | undefined): string {
  if (state === undefined) return entry.value === undefined ? `not set (svc secret set ${entry.name})` : 'config file (applied when the server next starts or reloads)';
  const when = new Date(state.updatedAt).toISOString();
  if (state.source === 'config') return `config file (${when})`;
  return entry.value === undefined ? `set with the CLI (${when})` : `set with the CLI (${when}); an edit of the config file's value takes over`;
}
