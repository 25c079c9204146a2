import { readFileSync, mkdirSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { availableParallelism, hostname } from 'node:os';
import { z } from 'zod';
import type { Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { monotonicClock, systemClock, type Clock } from './platform/clock.ts';
import { ConfigError, ConfigStore, readPluginsSection, readSource, validate } from './config/store.ts';
import { configSectionSchemas, formatIssue, zodIssues } from './config/compose.ts';
import type { Channel, SvcConfig } from './config/schema.ts';
import type { ConfigIssue, RawConfig } from './plugin.ts';
import { loadPlugins, type LoadedPlugin } from './plugin-loader.ts';
import { logRedactPaths, openApiFragments, type ControlOp, type ControlRun, type HostCall, type KernelApi, type Plugin, type PluginRoute } from './plugin.ts';
import { openStore } from './store/open.ts';
import { isolatedVmAdvisory, isolatedVmEntry, tenantsRefusedHere } from './sandbox/ivm.ts';
import { accessLogVia, serverLoggers, type AccessLog } from './platform/log.ts';
import type { DataStore } from '../sdk/plugin/store.ts';
import type { ServiceRunner } from './sandbox/runner.ts';
import { startServiceRunner } from './sandbox/groups.ts';
import { defaultDemoteCores } from './sandbox/demotion.ts';
import { TenantLedger } from './tenants/ledger.ts';
import { UsageSharing } from './tenants/cluster.ts';
import { ServiceRegistry, buildSdkBundle } from './services/registry.ts';
import { serviceControls } from './services/control.ts';
import { serviceTestOp } from './services/test-op.ts';
import { buildChain, expireStep, serviceSteps, type ActivePlugin, type ChainWatch, type ChannelRuntime } from './http/chain.ts';
import { StepWatch } from './platform/step-watch.ts';
import { ChannelRouter, toRoutePattern, type RouteEntry } from './http/router.ts';
import { buildHttp, cidGenerator } from './http/app.ts';
import { invokeRequestOf } from './sandbox/request.ts';
import { eventRunner, requestOfEvent } from './services/events.ts';
import { MessageFormats } from './services/messages.ts';
import type { ConnectionReport } from '../sdk/plugin/connections.ts';
import { checkTrustedProxies, trustedProxies, type PeerFilter } from './http/client-address.ts';
import { HostCalls } from './services/host-calls.ts';
import { invokeCall } from './services/invoke.ts';
import { ControlServer } from './control.ts';
import { deliveryProblem, type InvokeRequest, type InvokeResult } from './sandbox/protocol.ts';
import { SvcError } from './errors.ts';

export interface KernelOptions {
  configPath: string;
  /** Calendar time (rate-limit windows, stored timestamps). */
  clock?: Clock;
  /** Durations and deadlines (sandbox calls, wedged processes, step limits); monotonic unless a test moves it by hand. */
  monotonic?: Clock;
  logger?: Logger;
  /** Watch the config file and services directory (the CLI does; tests may not). */
  watch?: boolean;
  /** Plugins beyond the bundled ones (tests). */
  extraPlugins?: Plugin[];
  env?: NodeJS.ProcessEnv;
  /** Sees each line of the server's own logger before it is written (`svc start`'s startup summary); not with `logger`. */
  logTap?: (line: string) => void;
  /** Where plugins' lines for the operator go (KernelApi.tellOperator): `svc start`'s summary; stdout without. */
  tellOperator?: (text: string) => void;
}

/** Config and plugins, loaded and checked, before anything starts. */
export async function loadConfig(configPath: string, env: NodeJS.ProcessEnv = process.env, extraPlugins: Plugin[] = []) {
  const text = readFileSync(configPath, 'utf8');
  const raw = readSource(text, env);
  const loaded = await loadPlugins(readPluginsSection(raw), dirname(configPath));
  for (const p of extraPlugins) loaded.push({ plugin: p, options: p.configSchema.parse({}) });
  const plugins = loaded.map((l) => l.plugin);
  const config = validate(raw, plugins, env, dirname(configPath));
  const proxies = config.server.trusted_proxies;
  const proxyProblem = proxies && checkTrustedProxies(proxies);
  if (proxyProblem) throw new ConfigError([formatIssue({ path: ['server', 'trusted_proxies'], message: proxyProblem })]);
  return { text, config, loaded, plugins, raw: raw as RawConfig };
}

/** Relative directories are taken from where the server starts, as `npm start` in the project root expects. */
export function resolveDir(dir: string): string {
  return isAbsolute(dir) ? dir : resolve(dir);
}

export class Kernel {
  readonly app: FastifyInstance;
  readonly api: KernelApi;
  private router: ChannelRouter;
  private readonly steps: ChainWatch;
  private trusted: PeerFilter | undefined;
  /** The warning that trusted_proxies is not set was logged, and it is still not set. */
  private saidNoProxies = false;
  private readonly routes: PluginRoute[] = [];
  private readonly controlOps = new Map<string, ControlOp>();
  private readonly listening: Array<() => Promise<void>> = [];
  private readonly drains: Array<() => Promise<void>> = [];
  private readonly connectionReporters: Array<() => ConnectionReport[]> = [];
  private readonly provided = new Map<string, unknown>();
  /** Where plugins' lines for the operator go (KernelOptions.tellOperator). */
  private tellOperator = (text: string): void => void process.stdout.write(`${text}\n`);
  /** Listeners of the ops run through the control socket (KernelApi.onControlRun). */
  private readonly controlListeners: Array<(run: ControlRun) => Promise<void>> = [];
  /** The version of a service serving now, from its deploy history (services/control.ts). */
  private servingVersion: KernelApi['servingVersion'] = async () => undefined;
  private control: ControlServer | undefined;
  private active: ActivePlugin[] = [];
  private closing = false;
  private started = false;
  private advisoryWarned = false;
  private readonly usageSharing: UsageSharing;

  private constructor(
    readonly configStore: ConfigStore,
    readonly loaded: LoadedPlugin[],
    readonly store: DataStore,
    readonly pool: ServiceRunner,
    readonly services: ServiceRegistry,
    readonly log: Logger,
    accessLog: AccessLog | undefined,
    readonly clock: Clock,
    monotonic: Clock,
    readonly dataDir: string,
    private readonly hostCalls: HostCalls,
    private readonly env: NodeJS.ProcessEnv,
    ledger: TenantLedger,
  ) {
    this.usageSharing = new UsageSharing(store, ledger, log);
    // biome-ignore lint/complexity/noUselessThisAlias: the API's closures read as what they reach, the kernel
    const kernel = this;
    const newCid = cidGenerator();
    const messageFormats = new MessageFormats(() => kernel.active.map((a) => a.plugin.contributes ?? {}));
    this.api = {
      log,
      store,
      clock,
      dataDir,
      env,
      tenantQuotas: ledger,
      server: () => kernel.configStore.current().server,
      config: () => kernel.configStore.current(),
      addRoute: (route) => void kernel.routes.push(route),
      addHostCall: (call: HostCall) => hostCalls.add(call),
      addControl: (op) => void kernel.controlOps.set(op.op, op),
      addConfigLayer: (layer) => configStore.addLayer(layer),
      proposeConfig: (candidate) => configStore.propose(candidate),
      reapplyConfig: (source) => configStore.reapply(source),
      rawConfig: () => configStore.rawConfig(),
      tenantConfigEntries: () => configStore.tenantEntries(),
      configSections: () => configSectionSchemas(loaded.map((l) => l.plugin)),
      controlOps: () => [...kernel.controlOps.values()],
      onControlRun: (listener) => void kernel.controlListeners.push(listener),
      tellOperator: (text) => kernel.tellOperator(text),
      onListen: (start) => void kernel.listening.push(start),
      onDrain: (drain) => void kernel.drains.push(drain),
      serviceMeta: (name) => kernel.services.get(name)?.meta,
      // The deploy history opens in init (after the plugins' setup); plugins ask at run time.
      servingVersion: (name) => kernel.servingVersion(name),
      contributions: () => kernel.active.map((a) => a.plugin.contributes ?? {}),
      invoke: (req) => kernel.invoke(req),
      invokeRequestOf: (ex) => invokeRequestOf(ex, ex.channel.service),
      newCid,
      eventRequest: (event) => requestOfEvent(event, event.cid ?? newCid()),
      runEvent: eventRunner({ invoke: (req) => kernel.invoke(req), checkerOf: (name) => kernel.services.get(name)?.checkInput, log }),
      provide: (name, value) => void kernel.provided.set(name, value),
      lookup: ((name: string) => kernel.provided.get(name)) as KernelApi['lookup'],
      openApiFragments: () => openApiFragments(kernel.active.map((a) => a.plugin)),
      lifecycle: () => (kernel.closing ? 'draining' : kernel.started ? 'serving' : 'starting'),
      sandboxStats: () => pool.stats(),
      addConnections: (reporter) => void kernel.connectionReporters.push(reporter),
      connections: () => kernel.connectionReporters.flatMap((report) => report()),
      decodeMessage: (format, body, settings) => messageFormats.decode(format, body, settings),
    };
    this.router = new ChannelRouter([]);
    this.steps = new StepWatch(configStore.current().server.step_timeout_ms, expireStep, undefined, monotonic);
    this.app = buildHttp({ log, accessLog, router: () => this.router, server: () => this.configStore.current().server, trusted: () => this.trusted, closing: () => this.closing, steps: this.steps });
  }

  static async create(opts: KernelOptions): Promise<Kernel> {
    const configPath = resolve(opts.configPath);
    const { text, config, loaded, plugins, raw } = await loadConfig(configPath, opts.env ?? process.env, opts.extraPlugins);
    const { log, access } = opts.logger ? { log: opts.logger, access: accessLogVia(opts.logger) } : serverLoggers(config.server.log_level, logRedactPaths(plugins), { isoTime: config.server.log_time === 'iso', tap: opts.logTap });
    // A node_modules built for another Node is a clear error here, before anything is opened.
    isolatedVmEntry();
    const dataDir = resolveDir(config.server.data_dir);
    // The store holds secret hashes and the control socket lives here: owner only.
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const store = await openStore(config.server.store, dataDir, plugins, log);
    const sb = config.server.sandbox;
    const ledger = new TenantLedger(opts.monotonic ?? monotonicClock);
    // The config store exists only further down: from then on the pause is read from it, as saved.
    let refusalPauseMs = () => config.server.refusal_pause_ms;
    const hostCalls = new HostCalls(log, ledger, () => refusalPauseMs());
    const pool = await startServiceRunner(
      {
        processes: sb.workers,
        tenantProcesses: sb.tenant_workers,
        caps: { spillAt: sb.spill_at, defaultMemoryMb: sb.memory_mb, maxMemoryMb: sb.max_memory_mb, defaultTimeoutMs: sb.timeout_ms, maxTimeoutMs: sb.max_timeout_ms, maxOutputBytes: sb.max_output_bytes, idleMs: sb.idle_ms, maxCallsPerIsolate: sb.max_calls_per_isolate, demoteAboveCores: sb.tenant_demote_cores ?? defaultDemoteCores(availableParallelism()), recycle: sb.recycle_idle_ms > 0 ? { idleMs: sb.recycle_idle_ms, aboveMb: sb.recycle_above_mb } : undefined },
        log,
        hostCall: (op, argsJson, invocation, caller) => hostCalls.run(op, argsJson, invocation, caller),
        hostCallsDone: (invocation) => hostCalls.finish(invocation),
        clock: opts.monotonic,
        ledger,
      },
      buildSdkBundle(),
    );
    const services = new ServiceRegistry(resolveDir(config.server.services_dir), pool, log, dataDir);
    const env = opts.env ?? process.env;
    const configStore = new ConfigStore(configPath, plugins, log, text, config, env, raw);
    refusalPauseMs = () => configStore.current().server.refusal_pause_ms;
    const kernel = new Kernel(configStore, loaded, store, pool, services, log, access, opts.clock ?? systemClock, opts.monotonic ?? monotonicClock, dataDir, hostCalls, env, ledger);
    if (opts.tellOperator) kernel.tellOperator = opts.tellOperator;
    try {
      await kernel.init(opts.watch ?? false);
    } catch (err) {
      await kernel.close();
      throw err;
    }
    return kernel;
  }

  private async init(watch: boolean): Promise<void> {
    for (const { plugin, options } of this.loaded) {
      const state = plugin.setup ? await plugin.setup(this.api, options) : undefined;
      this.active.push({ plugin, state });
    }
    const controls = await serviceControls(this.services, () => this.configStore.current(), this.store, this.log, this.env.SVC_NODE_NAME || hostname(), () => this.configStore.file);
    for (const op of controls.ops) this.api.addControl(op);
    this.servingVersion = controls.servingVersion;
    this.api.addControl(configStatusOp(this.configStore, this.pool));
    this.api.addControl(serviceTestOp(this.services, () => this.configStore.file));
    this.hostCalls.add(invokeCall(this.services, this.pool, () => this.configStore.current().server, this.log));
    await this.services.start(watch);
    this.configStore.extraCheck = (config) => this.routeIssues(config);
    await this.configStore.settle();
    await this.applyConfig(this.configStore.current(), true);
    this.configStore.on('change', (next: SvcConfig) => this.applyConfig(next, false));
    if (watch) this.configStore.watch();
    this.services.on('change', () => this.warnMissingServices(this.configStore.current()));
    this.usageSharing.start();
  }

  private async applyConfig(config: SvcConfig, first: boolean): Promise<void> {
    // Paths are checked before plugins see the config: a refused config must leave no trace in them.
    const issues = this.routeIssues(config).map(formatIssue);
    if (issues.length) {
      if (first) throw new ConfigError(issues);
      throw new Error(issues.join('; '));
    }
    // Tenants' sandbox processes and services first: routes and plugins then find what they name.
    await this.pool.setTenants(config.tenants);
    await this.services.setTenants(config.tenants.map((t) => ({ tenant: t.name, dir: resolveDir(t.services_dir ?? join('tenants', t.name, 'services')) })));
    for (const { plugin, state } of this.active) await plugin.onConfig?.(state, config);
    const invoke = (req: InvokeRequest) => this.invoke(req);
    this.router = new ChannelRouter(
      this.routeEntries(config, (channel, route) =>
        buildChain(channel, config, this.active, this.api, route ? { invoke: () => route.handler, onError: route.onError } : serviceSteps(channel, this.active, this.services, invoke)),
      ),
    );
    this.steps.limitMs = config.server.step_timeout_ms;
    const proxies = config.server.trusted_proxies;
    this.trusted = trustedProxies(proxies);
    // Said once, not at every save of the config: again only after it was set and then removed.
    if (!proxies && !this.saidNoProxies) this.log.warn('server.trusted_proxies is not set: X-Svc-Forwarded-For and X-Forwarded-For are honoured from any client, which can then pick the address rate limits see');
    this.saidNoProxies = !proxies;
    this.warnMissingServices(config);
  }

  private routeIssues(config: SvcConfig): ConfigIssue[] {
    const issues = new ChannelRouter(this.routeEntries(config, () => EMPTY_RUNTIME)).issues;
    const advisory = config.tenants.length ? tenantsRefusedHere() : undefined;
    if (advisory) issues.push({ path: ['tenants'], message: advisory });
    return issues;
  }

  private warnMissingServices(config: SvcConfig): void {
    this.warnAdvisoryOnce();
    for (const ch of config.channel_rest) {
      if (!this.services.get(ch.service)) this.log.warn({ channel: ch.name, service: ch.service }, 'channel names a service that is not deployed');
    }
  }

  private routeEntries(config: SvcConfig, chainOf: (channel: Channel, route?: PluginRoute) => ChannelRuntime): RouteEntry[] {
    const entries: RouteEntry[] = [];
    for (const route of this.routes) {
      const methods = Array.isArray(route.method) ? route.method : [route.method as string];
      entries.push({ runtime: chainOf(routeChannel(route), route), pattern: route.url, methods, path: ['plugin route', route.name] });
    }
    config.channel_rest.forEach((channel, i) => {
      entries.push({ runtime: chainOf(channel), pattern: toRoutePattern(channel.url_path), methods: channel.method ? [channel.method] : undefined, path: ['channel_rest', i, 'url_path'] });
    });
    return entries;
  }

  /** On an isolated-vm line with a known sandbox escape, once per start (docs/security.md). */
  private warnAdvisoryOnce(): void {
    if (this.advisoryWarned) return;
    this.advisoryWarned = true;
    const advisory = isolatedVmAdvisory();
    if (advisory) this.log.warn({ advisory: advisory.id, line: advisory.line }, advisory.warning);
  }

  invoke(req: InvokeRequest): Promise<InvokeResult> {
    if (!this.services.get(req.service)) return Promise.reject(new SvcError('SERVICE_NOT_DEPLOYED', `Service '${req.service}' is not deployed`));
    const problem = req.delivery === undefined ? undefined : deliveryProblem(req.delivery);
    if (problem) return Promise.reject(new SvcError('INTERNAL', undefined, { cause: new Error(problem) }));
    return this.pool.invoke(req);
  }

  /** Runs a control op as the control socket would (CLI → running server): its actor is `cli`. */
  async runControl(op: string, args: unknown): Promise<unknown> {
    const entry = this.controlOps.get(op);
    if (!entry) throw new Error(`unknown control op '${op}'`);
    const parsed = entry.args.safeParse(args);
    if (!parsed.success) throw new SvcError('INVALID_INPUT', `invalid arguments for '${op}': ${zodIssues(parsed.error.issues).join('; ')}`);
    if (entry.readOnly || !this.controlListeners.length) return entry.handler(parsed.data, undefined, 'cli');
    try {
      const result = await entry.handler(parsed.data, undefined, 'cli');
      await this.controlRan({ op, args: parsed.data, actor: 'cli' });
      return result;
    } catch (err) {
      await this.controlRan({ op, args: parsed.data, actor: 'cli', failure: err instanceof SvcError ? err.details : (err as Error).message });
      throw err;
    }
  }

  /** Tells the listeners (onControlRun) of a run: one that fails is logged, the op's answer stands. */
  private async controlRan(run: ControlRun): Promise<void> {
    for (const listener of this.controlListeners) {
      try {
        await listener(run);
      } catch (err) {
        this.log.error({ op: run.op, err: (err as Error).message }, 'a listener of control ops failed');
      }
    }
  }

  async listen(): Promise<string> {
    const server = this.configStore.current().server;
    const address = await this.app.listen({ host: server.host, port: server.port });
    this.control = new ControlServer(join(this.dataDir, 'control.sock'), (op, args) => this.runControl(op, args), this.log);
    await this.control.listen();
    for (const start of this.listening) await start();
    this.started = true;
    return address;
  }

  async close(): Promise<void> {
    this.closing = true;
    this.usageSharing.stop();
    this.configStore.close();
    this.services.close();
    await Promise.all([this.app.close(), ...this.drains.map((drain) => drain().catch((err: unknown) => this.log.error({ err }, 'drain failed')))]);
    await this.control?.close();
    // What still runs now is cut, and its host calls (outgoing requests) end with it: plugins can then close.
    await this.pool.close();
    for (const { plugin, state } of [...this.active].reverse()) {
      try {
        await plugin.stop?.(state);
      } catch (err) {
        this.log.error({ err, plugin: plugin.name }, 'plugin stop failed');
      }
    }
    await this.store.close();
    this.steps.close();
  }
}

const EMPTY_RUNTIME: ChannelRuntime = { channel: {} as Channel, steps: [], onError: [], onResponse: [], serviceStep: -1 };

/** What hook factories see of a plugin route: a channel with no service, no security and no data format unless the route says. */
function routeChannel(route: PluginRoute): Channel {
  return {
    service: '',
    security: 'none',
    data_format: '',
    url_params_pri: 'qs_over_path',
    params_pri: 'url_over_msg',
    ...route.channel,
    name: route.name,
    url_path: route.url,
  };
}

/**
 * `config.status` (the Dashboard's overview; the platform's): the config file, its last refused
 * save (when, and each problem with its line) until a save applies, and the sandbox processes.
 */
function configStatusOp(configStore: ConfigStore, pool: ServiceRunner): ControlOp {
  return {
    op: 'config.status',
    readOnly: true,
    args: z.object({}).strict(),
    handler: async () => {
      const sandbox = pool.stats();
      return { file: configStore.file, refused: configStore.refusal ?? null, sandbox: { processes: sandbox.processes, restarts: sandbox.processRestarts, quarantined: sandbox.quarantined } };
    },
  };
}
