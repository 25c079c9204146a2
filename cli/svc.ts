import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { Kernel, loadConfig, resolveDir } from '../kernel/kernel.ts';
import { ConfigError, readSource } from '../kernel/config/store.ts';
import { NativeModuleError } from '../kernel/platform/native.ts';
import { sandboxSchema, type SvcConfig } from '../kernel/config/schema.ts';
import { openStore, sqliteFileOf } from '../kernel/store/open.ts';
import { StoreUnavailableError } from '../sdk/plugin/store.ts';
import { sendControl } from '../kernel/control.ts';
import { startServiceRunner } from '../kernel/sandbox/groups.ts';
import { buildSdkBundle, isServiceFile, serviceName, transpile } from '../kernel/services/registry.ts';
import { initDirectory } from './init.ts';
import { devLogger, type DevLog } from './dev.ts';
import { runTests } from './testing/run.ts';
import { openApiFragments, type CliCommand, type CliEnv, type Plugin } from '../kernel/plugin.ts';
import type { ServiceMeta } from '../kernel/sandbox/protocol.ts';
import { EXIT_OK, EXIT_RUNTIME, serveUntilSignalled } from './lifecycle.ts';
import { StartupSummary } from './startup-summary.ts';
import { SERVICE_COMMANDS } from './service-commands.ts';

const EXIT_USAGE = 2;

const USAGE = `usage: svc <command> [options]

  svc start [--config FILE]      serve channels (default config: $SVC_CONFIG, config/svc.yaml, or svc.yaml)
  svc dev [--config FILE]        serve for development: readable logs, errors at the service's file:line:col
  svc test [FILE...]             run services' tests (services/**/*.test.ts) against them in the sandbox
  svc check [FILE]               validate a config file and the services it uses; exit 2 on any error
  svc init DIR                   a service directory anywhere: editor types for svc/sdk, a sample service, a config
  svc help                       this text, plus the commands of enabled plugins

exit codes: 0 ok, 1 runtime failure, 2 usage or config error`;

interface Parsed {
  words: string[];
  config: string | undefined;
}

function parseArgs(argv: string[]): Parsed {
  const words: string[] = [];
  let config: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--config' || a === '-c') config = argv[++i];
    else if (a.startsWith('--config=')) config = a.slice('--config='.length);
    else words.push(a);
  }
  return { words, config };
}

/** --config, else $SVC_CONFIG, else config/svc.yaml (a repository), else svc.yaml (a directory made by `svc init`). */
function configPathOf(explicit: string | undefined): string {
  const given = explicit ?? process.env.SVC_CONFIG;
  if (given !== undefined) return resolve(given);
  return resolve(!existsSync('config/svc.yaml') && existsSync('svc.yaml') ? 'svc.yaml' : 'config/svc.yaml');
}

function printConfigError(err: unknown): number {
  if (err instanceof ConfigError) {
    for (const issue of err.issues) process.stderr.write(`config error: ${issue}\n`);
    return EXIT_USAGE;
  }
  if (err instanceof NativeModuleError || err instanceof StoreUnavailableError) {
    process.stderr.write(`error: ${err.message}\n`);
    return EXIT_RUNTIME;
  }
  process.stderr.write(`error: ${(err as Error).stack ?? String(err)}\n`);
  return EXIT_RUNTIME;
}

/** `svc start`, and `svc dev` with its human-readable log and banner (cli/dev.ts). */
async function start(configPath: string, dev = false): Promise<number> {
  if (!existsSync(configPath)) {
    process.stderr.write(`config error: no config file at ${configPath}\n`);
    return EXIT_USAGE;
  }
  let kernel: Kernel;
  let devLog: DevLog | undefined;
  const startedAt = Date.now();
  const summary = dev ? undefined : new StartupSummary();
  try {
    devLog = dev ? await devLogger(configPath) : undefined;
    kernel = await Kernel.create({ configPath, watch: true, logger: devLog?.log, logTap: summary?.tap, tellOperator: summary?.tell });
  } catch (err) {
    return printConfigError(err);
  }
  const address = await kernel.listen().catch((err: Error) => {
    kernel.log.fatal({ err: err.message }, 'could not listen');
    return undefined;
  });
  if (!address) {
    await kernel.close();
    return EXIT_RUNTIME;
  }
  if (devLog) process.stdout.write(devLog.banner(address) + '\n');
  else {
    kernel.log.info({ address, config: configPath }, 'svc listening');
    // For the person at the terminal, after the lines above (stdout's batch goes out first).
    const text = summary!.render({ address, configPath, startedAt });
    setTimeout(() => process.stderr.write(text), 30).unref();
  }
  return serveUntilSignalled(kernel);
}

/** The services directory a config names, read leniently (for `check` when the config is invalid). */
function servicesDirOf(configPath: string): string {
  try {
    const raw = readSource(readFileSync(configPath, 'utf8'), process.env) as { server?: { services_dir?: unknown } };
    if (typeof raw.server?.services_dir === 'string') return raw.server.services_dir;
  } catch {
    /* the config errors are reported already */
  }
  return './services';
}

/** Deploys every service file of a directory into a one-process sandbox, as the server would: what each declares, and the errors. */
async function compileServices(dir: string, config: SvcConfig | undefined): Promise<{ metas: Map<string, ServiceMeta>; errors: string[] }> {
  const sandbox = config?.server.sandbox ?? sandboxSchema.parse(undefined);
  const files = existsSync(dir) ? readdirSync(dir).filter(isServiceFile) : [];
  const metas = new Map<string, ServiceMeta>();
  const errors: string[] = [];
  const caps = { spillAt: sandbox.spill_at, defaultMemoryMb: sandbox.memory_mb, maxMemoryMb: sandbox.max_memory_mb, defaultTimeoutMs: sandbox.timeout_ms, maxTimeoutMs: sandbox.max_timeout_ms, maxOutputBytes: sandbox.max_output_bytes, idleMs: 0 };
  const pool = await startServiceRunner({ processes: 1, caps, log: pino({ level: 'silent' }), hostCall: async () => '{"ok":false}' }, buildSdkBundle());
  try {
    for (const file of files) {
      const compiled = transpile(file, readFileSync(join(dir, file), 'utf8'));
      const outcome = 'error' in compiled ? { ok: false as const, error: compiled.error } : await pool.deploy(serviceName(file), file, compiled.code, compiled.map);
      if (outcome.ok) metas.set(serviceName(file), outcome.meta);
      else errors.push(outcome.error);
    }
  } finally {
    await pool.close();
  }
  return { metas, errors };
}

/** Validates the config and compiles every service, printing every problem (config and services alike). */
async function check(configPath: string): Promise<number> {
  if (!existsSync(configPath)) {
    process.stderr.write(`config error: no config file at ${configPath}\n`);
    return EXIT_USAGE;
  }
  const problems: string[] = [];
  let config: SvcConfig | undefined;
  try {
    config = (await loadConfig(configPath)).config;
  } catch (err) {
    if (!(err instanceof ConfigError)) return printConfigError(err);
    problems.push(...err.issues.map((i) => `config error: ${i}`));
  }
  const dir = resolveDir(config?.server.services_dir ?? servicesDirOf(configPath));
  const compiled = await compileServices(dir, config);
  const deployed = new Set(compiled.metas.keys());
  problems.push(...compiled.errors.map((e) => `service error: ${e}`));
  config?.channel_rest.forEach((ch, i) => {
    if (!deployed.has(ch.service)) problems.push(`config error: channel_rest[${i}].service: no service '${ch.service}' in ${dir}`);
  });
  for (const p of problems) process.stderr.write(p + '\n');
  if (problems.length || !config) return EXIT_USAGE;
  process.stdout.write(`ok: ${configPath} (${config.channel_rest.length} channels, ${deployed.size} services)\n`);
  return EXIT_OK;
}

/**
 * A command about to create the SQLite store says so, with where, on stderr. data_dir is taken
 * from the working directory (docs/decisions.md): a command run outside the directory the server
 * runs in would otherwise create an empty store there, silently, and make a change (an API key, a
 * password) the server never sees. Before a first start, creating it is right, and the note says
 * where it went.
 */
function noteNewStore(store: string | undefined, dataDir: string): void {
  const file = sqliteFileOf(store, dataDir);
  if (file === undefined || existsSync(file)) return;
  process.stderr.write(
    `note: there is no store at ${resolve(file)} yet: this command creates it. data_dir and a store path are taken from the working directory (${process.cwd()}); if the server runs from another directory, run this command there, or the server will not see this change.\n`,
  );
}

function cliEnv(configPath: string, config: CliEnv['config'], plugins: readonly Plugin[]): CliEnv {
  const dataDir = resolveDir(config.server.data_dir);
  return {
    config,
    openApiFragments: () => openApiFragments(plugins),
    contributions: () => plugins.map((p) => p.contributes ?? {}),
    serviceMetas: async () => (await compileServices(resolveDir(config.server.services_dir), config)).metas,
    configPath,
    openStore: () => {
      noteNewStore(config.server.store, dataDir);
      return openStore(config.server.store, dataDir, plugins, pino({ level: 'silent' }));
    },
    control: (op, args) => sendControl(join(dataDir, 'control.sock'), op, args),
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    out: (line) => void process.stdout.write(line + '\n'),
    err: (line) => void process.stderr.write(line + '\n'),
  };
}

async function pluginCommand(words: string[], configPath: string): Promise<number> {
  let loaded: Awaited<ReturnType<typeof loadConfig>>;
  try {
    loaded = await loadConfig(configPath);
  } catch (err) {
    return printConfigError(err);
  }
  const commands: CliCommand[] = [...SERVICE_COMMANDS, ...loaded.plugins.flatMap((p) => p.cli ?? [])];
  // The most specific command wins: `openapi --channels` before `openapi`.
  const command = commands.filter((c) => c.words.every((w, i) => words[i] === w)).sort((a, b) => b.words.length - a.words.length)[0];
  if (!command || words[0] === 'help') {
    const help = [USAGE, '', 'more commands (the kernel\'s, then the enabled plugins\'):', ...commands.map((c) => `  svc ${c.usage.replace(/^svc /, '')}\n      ${c.describe}`)].join('\n');
    if (words[0] === 'help') {
      process.stdout.write(help + '\n');
      return EXIT_OK;
    }
    process.stderr.write(`unknown command: ${words.join(' ')}\n\n${help}\n`);
    return EXIT_USAGE;
  }
  try {
    return await command.run(words.slice(command.words.length), cliEnv(configPath, loaded.config, loaded.plugins));
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return EXIT_RUNTIME;
  }
}

export async function main(argv: string[]): Promise<number> {
  const { words, config } = parseArgs(argv);
  const command = words[0];
  if (!command) {
    process.stderr.write(USAGE + '\n');
    return EXIT_USAGE;
  }
  if (command === 'start') return start(configPathOf(config));
  if (command === 'dev') return start(configPathOf(config), true);
  if (command === 'test') {
    const io = { out: (line: string) => void process.stdout.write(line + '\n'), err: (line: string) => void process.stderr.write(line + '\n'), color: !!process.stdout.isTTY };
    return runTests(words.slice(1), config, io);
  }
  if (command === 'check') return check(configPathOf(words[1] ?? config));
  if (command === 'init') {
    if (words.length !== 2) {
      process.stderr.write('usage: svc init DIR\n');
      return EXIT_USAGE;
    }
    return initDirectory(words[1]!, (line) => process.stdout.write(line + '\n'));
  }
  if (command === 'help' && !existsSync(configPathOf(config))) {
    process.stdout.write(USAGE + '\n');
    return EXIT_OK;
  }
  return pluginCommand(words, configPathOf(config));
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`error: ${err.stack ?? err.message}\n`);
    process.exit(EXIT_RUNTIME);
  },
);
