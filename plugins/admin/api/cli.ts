import { readFile, writeFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigError, hashSecret, isScryptHash, readConfigSource, type CliCommand, type CliEnv, type ControlOp, type KernelApi } from '../../../sdk/plugin/index.ts';
import type { AdminAuth } from './auth.ts';
import { deleteKey, newKey, storeKey, storePasswordHash } from './credential.ts';
import { IssuesError } from './errors.ts';
import type { AdminResources } from './resources.ts';
import { importSchema, keyNameSchema } from './schema.ts';
import { migrateAdmin, writeAudit } from './store.ts';
import { exportConfig } from './transfer.ts';

/** Who the audit names for changes made through the control socket (the server's OS user). */
const CLI_ACTOR = 'cli';

const setPasswordArgs = z.object({ hash: z.string().refine(isScryptHash, 'not a scrypt hash of this server') }).strict();
const createKeyArgs = z.object({ id: z.string().regex(/^[0-9a-f]{12}$/), name: keyNameSchema, digest: z.string().min(1).max(100) }).strict();
const deleteKeyArgs = z.object({ name: keyNameSchema }).strict();
const importArgs = z.object({ sections: importSchema }).strict();

/** The control ops behind `svc admin ...`, `svc export` and `svc import` (also listed by the admin API). */
export function adminControls(kernel: KernelApi, auth: AdminAuth, resources: AdminResources): ControlOp[] {
  const audit = (action: string, name?: string) => kernel.store.transaction((tx) => writeAudit(tx, { at: kernel.clock.now(), actor: CLI_ACTOR, action, name }), { durable: true });
  return [
    {
      op: 'admin.set-password',
      args: setPasswordArgs,
      handler: async ({ hash }: z.infer<typeof setPasswordArgs>) => {
        await storePasswordHash(kernel.store, hash, kernel.clock.now());
        auth.sessions.endAll();
        await audit('set-password');
        return { user: 'admin' };
      },
    },
    {
      op: 'admin.create-key',
      args: createKeyArgs,
      handler: async (key: z.infer<typeof createKeyArgs>) => {
        await storeKey(kernel.store, key, kernel.clock.now());
        await audit('create-key', key.name);
        return { name: key.name };
      },
    },
    {
      op: 'admin.delete-key',
      args: deleteKeyArgs,
      handler: async ({ name }: z.infer<typeof deleteKeyArgs>) => {
        if (!(await deleteKey(kernel.store, name))) throw new Error(`no API key named '${name}'`);
        await audit('delete-key', name);
        return { name };
      },
    },
    { op: 'config.export', readOnly: true, args: z.object({}).strict(), handler: async () => exportConfig(kernel, resources.catalogue()) },
    {
      op: 'config.import',
      args: importArgs,
      handler: async ({ sections }: z.infer<typeof importArgs>) => {
        try {
          return await resources.importSections(sections, CLI_ACTOR);
        } catch (err) {
          // The control socket carries a message only: the issues go in it, one per line.
          if (err instanceof IssuesError) throw new Error([err.details, ...err.issues.map((i) => `  ${issuePath(i.path)}: ${i.message}`)].join('\n'));
          throw err;
        }
      },
    },
  ];
}

function issuePath(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('') || '(root)';
}

async function readStdinSecret(env: CliEnv): Promise<string> {
  return (await env.readStdin()).replace(/\r?\n$/, '');
}

const setPassword: CliCommand = {
  words: ['admin', 'set-password'],
  usage: 'admin set-password',
  describe: 'Sets the admin password, read from standard input (never from arguments); stored hashed; ends every admin session.',
  async run(args, env) {
    if (args.length) return usage(env, 'no arguments: the password is read from standard input', 'admin set-password');
    const password = await readStdinSecret(env);
    if (password.length < 8 || password.length > 1024) return usage(env, 'the password must be 8 to 1024 characters', 'admin set-password');
    const hash = await hashSecret(password);
    const reply = await env.control('admin.set-password', { hash });
    if (reply) return done(env, reply, 'admin password changed; the running server uses it now');
    const store = await env.openStore();
    try {
      await storePasswordHash(store, hash, Date.now());
    } finally {
      await store.close();
    }
    env.out('admin password stored; no server is running, it applies when one starts');
    return 0;
  },
};

const createKey: CliCommand = {
  words: ['admin', 'create-key'],
  usage: 'admin create-key NAME',
  describe: 'Creates an admin API key for automation (Authorization: Bearer KEY) and prints it once; stored as a digest.',
  async run(args, env) {
    const name = keyNameSchema.safeParse(args[0]);
    if (args.length !== 1 || !name.success) return usage(env, 'NAME: letters, digits, `.`, `_`, `-`', 'admin create-key NAME');
    const key = newKey();
    const record = { id: key.id, name: name.data, digest: key.digest };
    const reply = await env.control('admin.create-key', record);
    if (reply && !reply.ok) return done(env, reply, '');
    if (!reply) {
      const store = await env.openStore();
      try {
        await migrateAdmin(store);
        await storeKey(store, record, Date.now());
      } catch (err) {
        env.err((err as Error).message);
        return 1;
      } finally {
        await store.close();
      }
    }
    env.out(`API key '${name.data}' (shown once; send it as Authorization: Bearer KEY):`);
    env.out(key.key);
    return 0;
  },
};

const deleteKeyCommand: CliCommand = {
  words: ['admin', 'delete-key'],
  usage: 'admin delete-key NAME',
  describe: 'Revokes an admin API key at once.',
  async run(args, env) {
    const name = keyNameSchema.safeParse(args[0]);
    if (args.length !== 1 || !name.success) return usage(env, 'NAME is required', 'admin delete-key NAME');
    const reply = await env.control('admin.delete-key', { name: name.data });
    if (reply) return done(env, reply, `API key '${name.data}' deleted`);
    const store = await env.openStore();
    try {
      await migrateAdmin(store);
      if (!(await deleteKey(store, name.data))) return usage(env, `no API key named '${name.data}'`, 'admin delete-key NAME');
    } finally {
      await store.close();
    }
    env.out(`API key '${name.data}' deleted`);
    return 0;
  },
};

const exportCommand: CliCommand = {
  words: ['export'],
  usage: 'export [--out FILE]',
  describe: 'Writes the running config (file and admin edits) as YAML in the config file shape; secrets become ${VARIABLE} references.',
  async run(args, env) {
    const out = args[0] === '--out' ? args[1] : args[0]?.startsWith('--out=') ? args[0].slice(6) : undefined;
    if ((args.length && out === undefined) || (args[0] === '--out' && args.length !== 2)) return usage(env, 'unknown arguments', 'export [--out FILE]');
    const reply = await env.control('config.export', {});
    if (!reply) {
      env.err('no server is running: export reads the running config (start it with `svc start`)');
      return 1;
    }
    if (!reply.ok) return done(env, reply, '');
    const { yaml } = reply.value as { yaml: string };
    if (out === undefined) env.out(yaml.replace(/\n$/, ''));
    else await writeFile(out, yaml, { mode: 0o600 });
    return 0;
  },
};

const importCommand: CliCommand = {
  words: ['import'],
  usage: 'import FILE',
  describe: 'Merges a YAML file (the config file shape, `${ENV}` allowed) into the running server: each entry is created or replaces the one of its name; checked whole, all or nothing.',
  async run(args, env) {
    if (args.length !== 1) return usage(env, 'FILE is required', 'import FILE');
    let sections: unknown;
    try {
      sections = readConfigSource(await readFile(args[0]!, 'utf8'), process.env);
    } catch (err) {
      for (const issue of err instanceof ConfigError ? err.issues : [(err as Error).message]) env.err(`import error: ${issue}`);
      return 2;
    }
    const reply = await env.control('config.import', { sections });
    if (!reply) {
      env.err('no server is running: import applies to the running server (start it with `svc start`)');
      return 1;
    }
    if (!reply.ok) {
      env.err(`nothing was imported: ${reply.error ?? 'refused'}`);
      return 2;
    }
    const { created, replaced } = reply.value as { created: number; replaced: number };
    env.out(`imported: ${created} created, ${replaced} replaced; applied now`);
    return 0;
  },
};

function usage(env: CliEnv, why: string, line: string): number {
  env.err(`${why}\nusage: svc ${line}`);
  return 2;
}

function done(env: CliEnv, reply: { ok: boolean; error?: string }, message: string): number {
  if (!reply.ok) {
    env.err(`the running server refused: ${reply.error ?? 'unknown error'}`);
    return 1;
  }
  env.out(message);
  return 0;
}

export const adminCommands: CliCommand[] = [setPassword, createKey, deleteKeyCommand, exportCommand, importCommand];
