import { readFile, writeFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigError, controlOrStore, hashSecret, isScryptHash, readConfigSource, usage, type CliCommand, type CliEnv, type ControlOp, type DataStore, type KernelApi } from '../../../sdk/plugin/index.ts';
import type { AdminAuth } from './auth.ts';
import { addUser, deleteKey, deleteUser, newKey, storeKey, storePasswordHash, type Grant } from './credential.ts';
import { IssuesError } from './errors.ts';
import type { AdminResources } from './resources.ts';
import { accountName, accountNameSchema, ADMIN_USER, CLI_PRINCIPAL, grantIssue, ROLES, tenantNameSchema, type Role } from './roles.ts';
import { importSchema, keyNameSchema } from './schema.ts';
import { migrateAdmin, writeAudit } from './store.ts';
import { exportConfig } from './transfer.ts';

const hashField = z.string().refine(isScryptHash, 'not a scrypt hash of this server');
const grantFields = { name: accountNameSchema, role: z.enum(ROLES).default('platform'), tenant: tenantNameSchema.optional() };
const setPasswordArgs = z.object({ hash: hashField, user: accountNameSchema.default(ADMIN_USER) }).strict();
const addUserArgs = z.object({ ...grantFields, hash: hashField }).strict();
const createKeyArgs = z.object({ id: z.string().regex(/^[0-9a-f]{12}$/), digest: z.string().min(1).max(100), ...grantFields }).strict();
const nameArgs = z.object({ name: accountNameSchema }).strict();
const importArgs = z.object({ sections: importSchema }).strict();

/** The control ops behind `svc admin ...`, `svc export` and `svc import` (also listed by the admin API, for platform administrators). */
export function adminControls(kernel: KernelApi, auth: AdminAuth, resources: AdminResources): ControlOp[] {
  const audit = (action: string, subject?: { name: string; tenant?: string | undefined }) =>
    kernel.store.transaction((tx) => writeAudit(tx, { at: kernel.clock.now(), actor: CLI_PRINCIPAL.who, action, name: subject?.name, tenant: subject?.tenant }), { durable: true });
  const checked = <T extends Grant>(grant: T): T => {
    const issue = grantIssue(grant, (t) => resources.scope.declared(t));
    if (issue) throw new Error(issue);
    return grant;
  };
  return [
    {
      op: 'admin.set-password',
      args: setPasswordArgs,
      handler: async ({ hash, user }: z.infer<typeof setPasswordArgs>) => {
        await storePasswordHash(kernel.store, hash, kernel.clock.now(), user);
        auth.sessions.endUser(user);
        await audit('set-password', { name: user });
        return { user };
      },
    },
    {
      op: 'admin.add-user',
      args: addUserArgs,
      handler: async (args: z.infer<typeof addUserArgs>) => {
        const user = checked({ ...args, tenant: args.tenant });
        await addUser(kernel.store, user, kernel.clock.now());
        await audit('create-user', user);
        return { name: user.name, role: user.role, tenant: user.tenant ?? null };
      },
    },
    {
      op: 'admin.delete-user',
      args: nameArgs,
      handler: async ({ name }: z.infer<typeof nameArgs>) => {
        if (!(await deleteUser(kernel.store, name))) throw new Error(`no account named '${name}'`);
        auth.sessions.endUser(name);
        await audit('delete-user', { name });
        return { name };
      },
    },
    {
      op: 'admin.create-key',
      args: createKeyArgs,
      handler: async (args: z.infer<typeof createKeyArgs>) => {
        const key = checked({ ...args, tenant: args.tenant });
        await storeKey(kernel.store, key, kernel.clock.now());
        await audit('create-key', key);
        return { name: key.name };
      },
    },
    {
      op: 'admin.delete-key',
      args: nameArgs,
      handler: async ({ name }: z.infer<typeof nameArgs>) => {
        if (!(await deleteKey(kernel.store, name))) throw new Error(`no API key named '${name}'`);
        await audit('delete-key', { name });
        return { name };
      },
    },
    { op: 'config.export', readOnly: true, args: z.object({}).strict(), handler: async () => exportConfig(kernel.rawConfig(), resources.catalogue()) },
    {
      op: 'config.import',
      args: importArgs,
      handler: async ({ sections }: z.infer<typeof importArgs>) => {
        try {
          return await resources.importSections(sections, CLI_PRINCIPAL);
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

/** `NAME --role R --tenant T` (also `--flag=value`): the positional words and the flags given. */
function readArgs(argv: readonly string[], flags: readonly string[]): { words: string[]; flags: Map<string, string> } | string {
  const words: string[] = [];
  const given = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      words.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (!flags.includes(flag)) return `unknown option '${flag}'`;
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') return `${flag} needs a value`;
    given.set(flag, value);
  }
  return { words, flags: given };
}

/** The grant `--role R [--tenant T]` names, for the account or key `local`; a string says what is wrong. */
function grantOf(env: CliEnv, local: string | undefined, flags: Map<string, string>, defaultRole?: Role): Grant | string {
  const name = keyNameSchema.safeParse(local);
  if (!name.success) return "NAME: letters, digits, '.', '_', '-' (a tenant's account is named by --tenant)";
  const role = z.enum(ROLES).safeParse(flags.get('--role') ?? defaultRole);
  if (!role.success) return `--role: one of ${ROLES.join(', ')}`;
  const tenantFlag = flags.get('--tenant');
  const tenant = tenantFlag === undefined ? undefined : tenantNameSchema.safeParse(tenantFlag);
  if (tenant && !tenant.success) return `--tenant: ${tenant.error.issues[0]?.message}`;
  const grant = { name: accountName(tenant?.data, name.data), role: role.data, tenant: tenant?.data };
  return grantIssue(grant, (t) => (env.config.tenants ?? []).some((d) => d.name === t)) ?? grant;
}

async function readPassword(env: CliEnv, line: string): Promise<string | number> {
  const password = await readStdinSecret(env);
  if (password.length < 8 || password.length > 1024) return usage(env, line, 'the password must be 8 to 1024 characters');
  return password;
}

const SET_PASSWORD = 'admin set-password [NAME]';
const setPassword: CliCommand = {
  words: ['admin', 'set-password'],
  usage: SET_PASSWORD,
  describe: "Sets an account's password (admin by default), read from standard input (never from arguments); stored hashed; ends that account's sessions.",
  async run(args, env) {
    const user = accountNameSchema.safeParse(args[0] ?? ADMIN_USER);
    if (args.length > 1 || !user.success) return usage(env, SET_PASSWORD, 'at most one argument, the account (admin by default, a tenant\'s as TENANT/NAME): the password is read from standard input');
    const password = await readPassword(env, SET_PASSWORD);
    if (typeof password === 'number') return password;
    const hash = await hashSecret(password);
    return applyChange(env, 'admin.set-password', { hash, user: user.data }, (store) => storePasswordHash(store, hash, Date.now(), user.data), `password of '${user.data}' changed`);
  },
};

const ADD_USER = 'admin add-user NAME --role ROLE [--tenant TENANT]';
const addUserCommand: CliCommand = {
  words: ['admin', 'add-user'],
  usage: ADD_USER,
  describe: 'Creates an admin account with a role (platform, or owner, developer or viewer of a tenant); the password is read from standard input. A tenant\'s account logs in as TENANT/NAME.',
  async run(args, env) {
    const read = readArgs(args, ['--role', '--tenant']);
    if (typeof read === 'string' || read.words.length !== 1 || !read.flags.has('--role')) return usage(env, ADD_USER, typeof read === 'string' ? read : 'NAME and --role are required');
    const grant = grantOf(env, read.words[0], read.flags);
    if (typeof grant === 'string') return usage(env, ADD_USER, grant);
    const password = await readPassword(env, ADD_USER);
    if (typeof password === 'number') return password;
    const user = { ...grant, hash: await hashSecret(password) };
    return applyChange(env, 'admin.add-user', user, (store) => addUser(store, user, Date.now()), `account '${grant.name}' (${grant.role}${grant.tenant ? ` of ${grant.tenant}` : ''}) created`);
  },
};

const DELETE_USER = 'admin delete-user NAME';
const deleteUserCommand: CliCommand = {
  words: ['admin', 'delete-user'],
  usage: DELETE_USER,
  describe: "Deletes an admin account (a tenant's as TENANT/NAME) and ends its sessions.",
  async run(args, env) {
    const name = accountNameSchema.safeParse(args[0]);
    if (args.length !== 1 || !name.success) return usage(env, DELETE_USER, 'NAME is required');
    const change = async (store: DataStore) => {
      if (!(await deleteUser(store, name.data))) throw new Error(`no account named '${name.data}'`);
    };
    return applyChange(env, 'admin.delete-user', { name: name.data }, change, `account '${name.data}' deleted`);
  },
};

const CREATE_KEY = 'admin create-key NAME [--tenant TENANT --role ROLE]';
const createKey: CliCommand = {
  words: ['admin', 'create-key'],
  usage: CREATE_KEY,
  describe: "Creates an admin API key for automation (Authorization: Bearer KEY) and prints it once; stored as a digest. A platform key unless --tenant and --role say whose.",
  async run(args, env) {
    const read = readArgs(args, ['--role', '--tenant']);
    if (typeof read === 'string' || read.words.length !== 1) return usage(env, CREATE_KEY, typeof read === 'string' ? read : 'NAME is required');
    if (read.flags.has('--tenant') && !read.flags.has('--role')) return usage(env, CREATE_KEY, "a tenant's key needs --role (owner, developer or viewer)");
    const grant = grantOf(env, read.words[0], read.flags, 'platform');
    if (typeof grant === 'string') return usage(env, CREATE_KEY, grant);
    const key = newKey();
    const record = { ...grant, id: key.id, digest: key.digest };
    const code = await applyChange(env, 'admin.create-key', record, (store) => storeKey(store, record, Date.now()));
    if (code !== 0) return code;
    env.out(`API key '${grant.name}' (${grant.role}${grant.tenant ? ` of ${grant.tenant}` : ''}; shown once; send it as Authorization: Bearer KEY):`);
    env.out(key.key);
    return 0;
  },
};

const deleteKeyCommand: CliCommand = {
  words: ['admin', 'delete-key'],
  usage: 'admin delete-key NAME',
  describe: "Revokes an admin API key at once (a tenant's as TENANT/NAME).",
  async run(args, env) {
    const name = accountNameSchema.safeParse(args[0]);
    if (args.length !== 1 || !name.success) return usage(env, 'admin delete-key NAME', 'NAME is required');
    const change = async (store: DataStore) => {
      if (!(await deleteKey(store, name.data))) throw new Error(`no API key named '${name.data}'`);
    };
    return applyChange(env, 'admin.delete-key', { name: name.data }, change, `API key '${name.data}' deleted`);
  },
};

/**
 * Sends the op to the running server; with none running, makes the change in the data store,
 * where a server reads it when it starts. Says which happened after `message` (none: says nothing).
 */
async function applyChange(env: CliEnv, op: string, args: unknown, change: (store: DataStore) => Promise<void>, message?: string): Promise<number> {
  let offline = false;
  const outcome = await controlOrStore(
    env,
    op,
    args,
    async (store) => {
      offline = true;
      await migrateAdmin(store);
      await change(store);
    },
    '',
  );
  if (typeof outcome === 'number') return outcome;
  if (message) env.out(`${message}; ${offline ? 'no server is running, it applies when one starts' : 'the running server uses it now'}`);
  return 0;
}

const exportCommand: CliCommand = {
  words: ['export'],
  usage: 'export [--out FILE]',
  describe: 'Writes the running config (file and admin edits) as YAML in the config file shape; secrets become ${VARIABLE} references.',
  async run(args, env) {
    const out = args[0] === '--out' ? args[1] : args[0]?.startsWith('--out=') ? args[0].slice(6) : undefined;
    if ((args.length && out === undefined) || (args[0] === '--out' && args.length !== 2)) return usage(env, 'export [--out FILE]', 'unknown arguments');
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
    if (args.length !== 1) return usage(env, 'import FILE', 'FILE is required');
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

function done(env: CliEnv, reply: { ok: boolean; error?: string }, message: string): number {
  if (!reply.ok) {
    env.err(`the running server refused: ${reply.error ?? 'unknown error'}`);
    return 1;
  }
  env.out(message);
  return 0;
}

export const adminCommands: CliCommand[] = [setPassword, addUserCommand, deleteUserCommand, createKey, deleteKeyCommand, exportCommand, importCommand];
