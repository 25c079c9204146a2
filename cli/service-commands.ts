import { hostname } from 'node:os';
import pino from 'pino';
import { controlOrStore, usage, type CliCommand } from '../sdk/plugin/index.ts';
import { DeployHistory, type VersionInfo } from '../kernel/services/history.ts';

/**
 * `svc service history|show|rollback`: the deploy history of a service (kernel/services/history.ts)
 * through the running server's control ops (services.history, services.version,
 * services.rollback). With no server running, history and show read the store; a rollback
 * deploys, so it needs the server.
 */

/** NAME VERSION, or undefined when the arguments are not exactly those. */
function nameAndVersion(argv: string[]): { name: string; version: number } | undefined {
  const [name, n] = argv;
  const version = Number(n);
  return argv.length === 2 && name && !name.startsWith('--') && Number.isInteger(version) && version >= 1 ? { name, version } : undefined;
}

const openHistory = (store: Parameters<typeof DeployHistory.open>[0]) => DeployHistory.open(store, hostname(), pino({ level: 'silent' }));

function versionLine(v: VersionInfo): string {
  const by = v.actor ? ` by ${v.actor}` : '';
  return `${String(v.version).padStart(4)}  ${v.deployed_at}  ${v.hash.slice(0, 12)}  ${v.origin}${by} on ${v.node}  ${v.file} (${v.bytes} bytes)`;
}

const historyCommand: CliCommand = {
  words: ['service', 'history'],
  usage: 'service history NAME [--json]',
  describe: "Lists a service's deployed versions, newest first: number, time, content hash, origin (file, upload, rollback, last-good), who and on which node.",
  async run(argv, env) {
    const name = argv.find((a) => !a.startsWith('--'));
    if (!name || argv.some((a) => a.startsWith('--') && a !== '--json')) return usage(env, this.usage);
    const out = await controlOrStore(
      env,
      'services.history',
      { name },
      async (store) => {
        const versions = await (await openHistory(store)).list(name);
        if (!versions.length) throw new Error(`no deployed version of a service named '${name}' is recorded`);
        return { name, versions };
      },
      '',
    );
    if (typeof out === 'number') return out;
    const value = out.value as { name: string; versions: VersionInfo[] };
    if (argv.includes('--json')) env.out(JSON.stringify(value, null, 2));
    else for (const v of value.versions) env.out(versionLine(v));
    return 0;
  },
};

const showCommand: CliCommand = {
  words: ['service', 'show'],
  usage: 'service show NAME VERSION',
  describe: 'Prints the source of one deployed version of a service (diff two with your own diff tool).',
  async run(argv, env) {
    const args = nameAndVersion(argv);
    if (!args) return usage(env, this.usage);
    const { name, version } = args;
    const out = await controlOrStore(
      env,
      'services.version',
      { name, version },
      async (store) => {
        const found = await (await openHistory(store)).get(name, version);
        if (!found) throw new Error(`service '${name}' has no version ${version}`);
        return found;
      },
      '',
    );
    if (typeof out === 'number') return out;
    process.stdout.write((out.value as { source: string }).source);
    return 0;
  },
};

const rollbackCommand: CliCommand = {
  words: ['service', 'rollback'],
  usage: 'service rollback NAME VERSION',
  describe: 'Deploys an earlier version of a service again (it becomes the newest): compiled first, written to its file only once it deployed, on every node.',
  async run(argv, env) {
    const args = nameAndVersion(argv);
    if (!args) return usage(env, this.usage);
    const { name, version } = args;
    const out = await controlOrStore(env, 'services.rollback', args, undefined, 'no server is running: a rollback deploys, start the server with `svc start` first');
    if (typeof out === 'number') return out;
    const v = out.value as { version: number | null; file: string | null };
    env.out(`${name}: version ${version} deployed again from ${v.file ?? '?'}, now version ${v.version ?? '?'}`);
    return 0;
  },
};

export const SERVICE_COMMANDS: CliCommand[] = [historyCommand, showCommand, rollbackCommand];
