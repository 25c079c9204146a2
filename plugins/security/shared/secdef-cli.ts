import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { CliCommand, CliEnv, ControlOp } from '../../../sdk/plugin/index.ts';
import type { SecretManager } from './secret-manager.ts';
import { isStoredBuiltin, storeSecretOffline } from './secret-manager.ts';
import { hashSecret, isScryptHash } from './secrets.ts';

/** One `svc secdef set-…` command and the control op behind it. */
export interface SecdefSpec {
  /** Security type the command applies to. */
  type: string;
  /** Subcommand word: set-password, set-key. */
  subcommand: string;
  /** The entry field holding the config file's secret: password, key. */
  configField: string;
  /** Word for messages: password, key. */
  secretWord: string;
  problem: (secret: string) => string | undefined;
}

export function controlOpName(spec: SecdefSpec): string {
  return `secdef.${spec.subcommand}`;
}

const scryptHash = z.string().refine(isScryptHash, 'not a scrypt hash of this server');

/**
 * Only hashes cross the control socket: the plaintext stays in the CLI process.
 * configHash is the hash of the config file's value when the CLI ran (null: none).
 */
export const setSecretArgs = z
  .object({
    name: z.string().min(1),
    hash: scryptHash,
    configHash: scryptHash.nullable(),
  })
  .strict();
export type SetSecretArgs = z.infer<typeof setSecretArgs>;

export function secdefControl(spec: SecdefSpec, manager: SecretManager): ControlOp<SetSecretArgs> {
  return {
    op: controlOpName(spec),
    args: setSecretArgs,
    handler: async ({ name, hash, configHash }) => {
      await manager.setHash(name, hash, configHash);
      return { definition: name };
    },
  };
}

export function secdefCommand(spec: SecdefSpec): CliCommand {
  const usage = `secdef ${spec.subcommand} NAME [--file PATH]`;
  return {
    words: ['secdef', spec.subcommand],
    usage,
    describe: `Sets the ${spec.secretWord} of ${spec.type} definition NAME, read from standard input or --file (never from the command line); stored hashed, applied at once when the server runs.`,
    run: async (args, env) => {
      const parsed = parseArgs(args);
      if (typeof parsed === 'string') {
        env.err(`${parsed}\nusage: svc ${usage}`);
        return 2;
      }
      // Not in the config file: it may still be a built-in definition (pub/sub's test one).
      const entry = env.config.security.find((s) => s.name === parsed.name);
      if (entry !== undefined && entry.type !== spec.type) {
        env.err(`'${parsed.name}' is of type ${entry.type}, not ${spec.type}`);
        return 2;
      }
      const secret = await readSecret(parsed.file, env, spec.secretWord);
      if (secret === undefined) return 2;
      const problem = spec.problem(secret);
      if (problem !== undefined) {
        env.err(`the ${spec.secretWord} ${problem}`);
        return 2;
      }
      const configValue = entry?.[spec.configField];
      const [hash, configHash] = await Promise.all([
        hashSecret(secret),
        typeof configValue === 'string' ? hashSecret(configValue) : Promise.resolve(null),
      ]);
      return apply(spec, env, { name: parsed.name, hash, configHash }, entry !== undefined);
    },
  };
}

async function apply(spec: SecdefSpec, env: CliEnv, args: SetSecretArgs, inConfig: boolean): Promise<number> {
  const reply = await env.control(controlOpName(spec), args);
  if (reply !== undefined) {
    if (!reply.ok) {
      env.err(`the running server refused: ${reply.error ?? 'unknown error'}`);
      return inConfig ? 1 : 2;
    }
    env.out(`${spec.secretWord} of '${args.name}' changed; the running server uses it now`);
    return 0;
  }
  const store = await env.openStore();
  try {
    if (!inConfig && !(await isStoredBuiltin(store, spec.type, args.name))) {
      env.err(`no ${spec.type} definition named '${args.name}' in ${env.configPath}`);
      return 2;
    }
    await storeSecretOffline(store, { definition: args.name, type: spec.type, hash: args.hash, configHash: args.configHash, now: Date.now() });
  } finally {
    await store.close();
  }
  env.out(`${spec.secretWord} of '${args.name}' stored; no server is running, it applies when one starts`);
  return 0;
}

function parseArgs(args: string[]): { name: string; file: string | undefined } | string {
  let name: string | undefined;
  let file: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--file') {
      if (i + 1 >= args.length) return '--file needs a path';
      file = args[++i];
    } else if (arg.startsWith('--file=')) {
      file = arg.slice('--file='.length);
    } else if (arg.startsWith('-')) {
      return `unknown option ${arg} (secrets are read from standard input or --file, never from arguments)`;
    } else if (name === undefined) {
      name = arg;
    } else {
      return 'too many arguments (secrets are read from standard input or --file, never from arguments)';
    }
  }
  if (name === undefined) return 'NAME is required';
  if (file === '') return '--file needs a path';
  return { name, file };
}

/** One trailing line break is dropped (echo, editors); anything else is part of the secret. */
async function readSecret(file: string | undefined, env: CliEnv, word: string): Promise<string | undefined> {
  let text: string;
  try {
    text = file === undefined ? await env.readStdin() : await readFile(file, 'utf8');
  } catch (err) {
    env.err(`cannot read the ${word}: ${(err as Error).message}`);
    return undefined;
  }
  return text.replace(/\r?\n$/, '');
}
