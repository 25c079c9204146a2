import type { z } from 'zod';
import type { Logger } from 'pino';
import type { Capabilities, CapabilityName } from './capabilities.ts';
import type { Exchange } from './exchange.ts';
import type { HookName } from './hooks.ts';
import type { Channel, SvcConfig, ServerConfig, TenantQuotas } from './config.ts';
import type { DataStore, StoreStrategy } from './store.ts';
import type { Clock } from './clock.ts';
import type { SvcError } from './errors.ts';
import type { EventOutcome, SourceEvent } from './events.ts';
import type { ConnectionReport } from './connections.ts';
import type { DecodedMessage, MessageDecoder } from './messages.ts';
import type { InvokeRequest, InvokeResult, SandboxStats, ServiceMeta, TraceContext } from './protocol.ts';

/**
 * The plugin contract: what a plugin is, what it may contribute, and what the kernel offers it.
 * The kernel implements these; plugins see them through svc/sdk/plugin.
 */

export const PLUGIN_KINDS = ['format', 'security', 'limit', 'pubsub', 'outgoing', 'delivery', 'store', 'other'] as const;
export type PluginKind = (typeof PLUGIN_KINDS)[number];

/** A per-request step. Small, named and allocation-light: heavy work belongs in the factory. */
export type HookFn = (ex: Exchange) => void | Promise<void>;
export type ErrorHookFn = (ex: Exchange, err: unknown) => void | Promise<void>;

export interface HookContext<S> {
  channel: Channel;
  config: SvcConfig;
  state: S;
  kernel: KernelApi;
}

/**
 * Called once per channel whenever config loads. Returns the per-request function,
 * or undefined when the plugin has nothing to do on that channel (the phase is skipped).
 * Declared through a method so that a plugin's factories, typed by its state, still fit a
 * `Plugin` of unknown state (parameters of methods are compared both ways).
 */
export type HookFactory<S> = { factory(ctx: HookContext<S>): HookFn | ErrorHookFn | undefined }['factory'];

/** A problem found in config, with its YAML path. */
export interface ConfigIssue {
  path: (string | number)[];
  message: string;
}

/** Part of an OpenAPI 3.1 document: its paths, and the tags and component schemas they use. */
export interface OpenApiFragment {
  tags?: Array<Record<string, unknown>>;
  paths: Record<string, unknown>;
  schemas?: Record<string, unknown>;
  securitySchemes?: Record<string, unknown>;
  /** Reusable response headers (components.headers). */
  headers?: Record<string, unknown>;
}

/** How a channel's request body reads in OpenAPI, per data format (ChannelOpenApi.bodies). */
export interface ChannelBodyDoc {
  /** The request body's media type (`application/json`). */
  mediaType: string;
  /**
   * Where a service's typed input fields travel in the body: `object`, the body is an object of
   * them (JSON, form, XML, multipart); `message`, they are read out of a message of the format's
   * own syntax (`schema`; HL7); `none`, the body is not read for fields (they come from the URL).
   */
  fields: 'object' | 'message' | 'none';
  /** The body's schema when it is not an object of the fields. */
  schema?: Record<string, unknown>;
  /** What a client should know about it (values as text, the root element, files). */
  description?: string;
  /** Media type of the service's answer when the format writes it (`application/xml`). */
  replyMediaType?: string;
}

/**
 * A plugin's part in the OpenAPI document of the channels (the channels-openapi plugin reads
 * every enabled plugin's): request bodies of its data formats, the security schemes of its
 * security targets, and the answers it adds on a channel.
 */
export interface ChannelOpenApi {
  /** Request bodies of channels with one of its data formats, by format name. */
  bodies?: Record<string, ChannelBodyDoc>;
  /**
   * The security schemes a channel's `security` target stands for, by scheme name, when the
   * target is this plugin's (undefined otherwise); any one of them is accepted. `resolve` reads
   * another target (a group's members).
   */
  security?: (target: string, config: SvcConfig, resolve: (target: string) => Record<string, unknown> | undefined) => Record<string, unknown> | undefined;
  /** Error answers it may give on this channel, by status, with why (rate limits: 429). */
  responses?: (channel: Channel, config: SvcConfig) => Record<number, string> | undefined;
  /** The success answer when it replaces the service's (the Use queue's 200 `{cid}`). */
  success?: (channel: Channel) => { status: number; description: string; schema: Record<string, unknown> } | undefined;
}

export interface Contributions {
  /** Values of `channel_rest[].data_format` this plugin handles. */
  dataFormats?: readonly string[];
  /**
   * Of those, the formats whose payload field values are text (XML, form, HL7): the kernel
   * converts them to a typed model's declared types, as it does for URL parameters.
   */
  textFormats?: readonly string[];
  /**
   * Of those, the formats whose parse step sets the payload to exactly `JSON.parse` of the body's
   * UTF-8 text (SDK 1.3). When such a step is the only one in the channel's parse phase and no
   * plugin taps validate or invoke there, the kernel sends the service the body text alone and the
   * sandbox parses it again: the body crosses the process boundary once, not as text and value.
   */
  jsonBodyFormats?: readonly string[];
  /**
   * The formats whose serialize step sends a string body that has a content type as it is, and
   * any other body that is not bytes as `JSON.stringify(body)`, typed `application/json;
   * charset=utf-8` unless the service chose a type (SDK 1.4). When such a step is the only one in
   * the channel's serialize phase, the sandbox encodes an object, array, number, boolean or null
   * that a service returns, and the kernel receives that JSON text as the body, typed, without
   * decoding and encoding it again.
   */
  jsonReplyFormats?: readonly string[];
  /** Schemas of `security[]` entries by `type` (the base keys name/type are added by the kernel). */
  securityTypes?: Record<string, z.ZodRawShape>;
  /** Extra keys on every `security[]` entry (e.g. rate_limiting). */
  securityFields?: z.ZodRawShape;
  /** Extra keys on every `channel_rest[]` entry. */
  channelFields?: z.ZodRawShape;
  /** Extra keys of the `server` section (declare their types in ServerFields, sdk/plugin/extensions.ts). */
  serverFields?: z.ZodRawShape;
  /**
   * Whole top-level sections this plugin owns, by name (declare their types in ConfigSections,
   * sdk/plugin/extensions.ts). A section no enabled plugin owns is a config error.
   */
  sections?: Record<string, z.ZodType>;
  /** The data format channels get when they name none; at most one enabled plugin may say so. */
  defaultDataFormat?: string;
  /** Names a channel's `security` may refer to besides `security[]` entries (e.g. group names). */
  securityTargets?: (config: SvcConfig) => Iterable<string>;
  /** Cross-reference checks once the whole config parsed (`context`: what the enabled plugins offer; SDK 1.8). */
  validateConfig?: (config: SvcConfig, context: ValidationContext) => ConfigIssue[];
  /** Decoders of messages that do not come over HTTP, by data format name (SDK 1.8, sdk/plugin/messages.ts). */
  messageFormats?: Record<string, MessageDecoder>;
  /** Log fields that carry its credentials (pino redact paths, e.g. `headers.authorization`): censored in every log line. */
  logRedact?: readonly string[];
  /** The OpenAPI 3.1 part of the routes it serves; built when a document is asked for. */
  openapi?: () => OpenApiFragment;
  /** Its part in the channels' OpenAPI document (formats, security targets, extra answers). */
  channelOpenApi?: ChannelOpenApi;
  /** A data store it opens for `server.store` URLs of its schemes (SDK 1.2). */
  dataStore?: StoreStrategy;
  /** Write-only fields whose values it keeps in the store, set outside the config file (SDK 1.16). */
  storedSecrets?: readonly StoredSecrets[];
}

/**
 * A write-only field of a config section whose value a plugin keeps in the store, where a command
 * such as `svc secdef set-password` or `svc secret set` puts it: the admin API shows such an
 * entry's field as set, as it does a value written in the file, never the value.
 */
export interface StoredSecrets {
  /** The config section (`security`, `secrets`). */
  section: string;
  /** The entry's write-only field (`password`, `key`, `value`). */
  field: string;
  /** The names of the section's entries whose field holds a stored value. */
  entries: (store: DataStore) => Promise<Iterable<string>>;
}

/** What the enabled plugins offer, for config checks that refer to it. SDK 1.8. */
export interface ValidationContext {
  /** Data formats some enabled plugin decodes messages of (Contributions.messageFormats). */
  messageFormats: ReadonlySet<string>;
}

/**
 * A plugin is plain data. The kernel validates it, runs setup once, then builds hooks per channel.
 * The kernel holds plugins of every options and state type as `Plugin` (unknown both): `setup`,
 * `onConfig` and `stop` are methods, whose parameters are compared both ways, so a plugin's own
 * `Plugin<O, S>` is one without a cast.
 */
export interface Plugin<O = unknown, S = unknown> {
  name: string;
  kind: PluginKind;
  version: string;
  /** The plugin SDK versions it works with, as a semver range ('^1.0.0'); checked at load. */
  sdk: string;
  /** Capabilities it offers other plugins with `kernel.provide` (sdk/plugin/capabilities.ts). */
  provides?: readonly CapabilityName[];
  /** Capabilities it looks up; each must be provided by an enabled plugin, or loading fails. */
  needs?: readonly CapabilityName[];
  /** Options under `plugins.<name>.config`; failures name the plugin and the field. */
  configSchema: z.ZodType<O>;
  contributes?: Contributions;
  /** Heavy setup, once: tables, caches, routes. Returns the plugin's state. */
  setup?(kernel: KernelApi, options: O): S | Promise<S>;
  /** Every accepted config, the first one included, before channels are rebuilt. */
  onConfig?(state: S, config: SvcConfig): void | Promise<void>;
  hooks: Partial<Record<HookName, HookFactory<S>>>;
  /** Subcommands of the `svc` CLI this plugin adds (e.g. `secdef set-password`). */
  cli?: CliCommand[];
  /**
   * Shutdown, after the channel listener drained and the sandbox processes stopped: close what it
   * holds. Work that runs services must finish in an `onDrain` callback (KernelApi), before this.
   */
  stop?(state: S): void | Promise<void>;
}

/**
 * An operation the running server accepts on its local control socket
 * (`<data_dir>/control.sock`), used by CLI commands to act at once.
 */
export interface ControlOp<A = unknown> {
  op: string;
  args: z.ZodType<A>;
  /**
   * A method, so that an op of any argument type is a `ControlOp`; it runs with what `args` parsed.
   * `caller` is given when a tenant's administrator runs it (admin API, `tenantScoped` ops only).
   * `actor` says who runs it, for what the op records (SDK 1.12): the admin API's account or key
   * name, `cli` through the control socket; undefined when neither (tests, embedders).
   */
  handler(args: A, caller?: OpCaller, actor?: string): Promise<unknown>;
  /**
   * It only reads (lists, shows, exports): the admin API then leaves it out of the audit log,
   * which the Dashboard's polling pages would otherwise fill. SDK 1.2.
   */
  readOnly?: boolean;
  /**
   * A tenant's administrators may run it (SDK 1.10; docs/tenants.md). Its arguments that name
   * resources carry `scopedRef` marks (sdk/plugin/tenants.ts): the admin API qualifies them with
   * the caller's tenant, so they can only name its own. The handler, given `caller.tenant`, lists
   * and acts on that tenant's things only, and answers a thing of another as not found. Without
   * it, only platform administrators (and the control socket) run the op.
   */
  tenantScoped?: boolean;
}

/** Who runs a control op, when it is not the platform. */
export interface OpCaller {
  /** The tenant whose administrator runs it: the op shows and touches only that tenant's things. */
  tenant: string;
}

export interface CliEnv {
  config: SvcConfig;
  /** The OpenAPI parts of the enabled plugins (Contributions.openapi). */
  openApiFragments: () => OpenApiFragment[];
  /** The enabled plugins' contributions, in load order. */
  contributions: () => readonly Contributions[];
  /**
   * Compiles the services directory in a sandbox, as `svc check` does, without a server: what
   * each service that compiles declares, by name.
   */
  serviceMetas: () => Promise<Map<string, ServiceMeta>>;
  configPath: string;
  /** Opens the data store (the same one the server uses: `server.store`, SVC_STORE). */
  openStore: () => Promise<DataStore>;
  /** Sends a control op to the running server; undefined when no server is running. */
  control: (op: string, args: unknown) => Promise<{ ok: boolean; value?: unknown; error?: string } | undefined>;
  /** Reads all of standard input (secrets never come from argv). */
  readStdin: () => Promise<string>;
  out: (line: string) => void;
  err: (line: string) => void;
}

export interface CliCommand {
  /** Words after `svc`, e.g. ['secdef', 'set-password']. */
  words: string[];
  usage: string;
  describe: string;
  /** Returns the exit code: 0 ok, 1 runtime failure, 2 usage or config error. */
  run: (args: string[], env: CliEnv) => Promise<number>;
}

export function definePlugin<O, S>(plugin: Plugin<O, S>): Plugin<O, S> {
  return plugin;
}

/**
 * A route a plugin serves itself (the pub/sub APIs; admin and health next), outside the channel
 * table. It runs through the same hook chain as a channel, so authentication, rate limiting, body
 * parsing and error shaping come from the plugins that do them for channels; `handler` takes the
 * place of the service in the invoke phase.
 */
export interface PluginRoute {
  name: string;
  method: string | readonly string[];
  /** find-my-way pattern; `*` at the end captures the rest of the path. */
  url: string;
  /**
   * What the chain's plugins see of this route, as if it were a channel: `security` (a definition,
   * a group, or `@<plugin name>`, a target only that plugin authenticates; config names cannot
   * start with `@`), `data_format`, `rate_limiting`... Unset: security 'none', no data format.
   */
  channel?: Partial<Channel>;
  handler: HookFn;
  /** Shapes this route's errors (an API with its own error body) before plugins' onError hooks. */
  onError?: ErrorHookFn;
}

/** Host functions that services reach through the SDK (publish, outgoing calls, ...). */
/** A logger with a budget: one request's host calls write a few lines, then are counted. */
export interface HostCallLog {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface HostCallContext {
  cid: string;
  service: string;
  channel: string | undefined;
  log: HostCallLog;
  /** Aborted when the calling request's service call ends (its reply, its time limit, a crash): pass it to I/O. */
  signal: AbortSignal;
  /** The calling request's trace context (InvokeRequest.trace), which work done on its behalf continues (SDK 1.1). */
  trace?: TraceContext | undefined;
  /**
   * Milliseconds until the calling service's time limit, less a reserve for the service to catch
   * an error and answer (`HOST_CALL_RESERVE_MS`); 0 once past (SDK 1.17). A host call that waits
   * (for a connection, a free session, a confirm, an answer) ends that wait by then with its own
   * error, as its own timeouts would: otherwise a wait longer than the service's limit ended the
   * call with SERVICE_TIMEOUT, and the service never saw the error its docs promise.
   */
  timeLeftMs(): number;
}

export interface HostCall<A = unknown> {
  /** Operation name as the SDK sends it, e.g. `pubsub.publish`. */
  op: string;
  /** Checked on the host side before the handler runs. */
  args: z.ZodType<A>;
  /** A method, so that a call of any argument type is a `HostCall`; it runs with what `args` parsed. */
  handler(args: A, ctx: HostCallContext): Promise<unknown>;
  /**
   * The tenant quota each call counts against (SDK 1.11): `outgoing_calls_per_minute` for a call
   * that reaches an outgoing connection. The kernel takes it before the handler runs; a call of a
   * tenant's service past it fails with `TooManyRequests` (TENANT_QUOTA) and nothing is sent.
   */
  quota?: MeteredQuota;
}

/** Config data before validation, as YAML gives it (after `${ENV}` substitution). */
export type RawConfig = Record<string, unknown>;

/**
 * A config source over the YAML file (the admin API's edits). Layers apply in registration
 * order to the file's data; the result is validated whole like the file alone. `apply` must not
 * change its argument.
 */
export interface ConfigLayer {
  name: string;
  apply(raw: RawConfig): RawConfig;
  /** Awaited once every plugin is set up, before the first build (data that needs another plugin's capability). */
  ready?(): Promise<void>;
}

/** A candidate config checked whole: the validated config, or every issue with its path. */
export type ConfigCheck = { ok: true; config: SvcConfig; raw: RawConfig } | { ok: false; issues: ConfigIssue[] };

/**
 * Where the server is in its life: `starting` until the services are deployed and every
 * listener is up (`svc start` finished starting), `serving`, then `draining` once shutdown began.
 */
export type Lifecycle = 'starting' | 'serving' | 'draining';

/** Quotas counted over a sliding window, by the plugin that does what they limit. */
export type MeteredQuota = 'outgoing_calls_per_minute' | 'publishes_per_second';
/** Every per-tenant quota (TenantQuotas, sdk/plugin/config.ts). */
export type TenantQuotaName = keyof TenantQuotas;

/**
 * Tenants' quotas for plugins (SDK 1.11, docs/tenants.md "Quotas"). Refusals are SvcErrors
 * TENANT_QUOTA (429, Retry-After), counted in the tenant's figures and `svc_tenant_throttled_total`.
 */
export interface TenantQuotaApi {
  /** The tenant's limit for a quota, if it has one; none for the platform (`undefined` tenant). */
  limit(tenant: string | undefined, quota: TenantQuotaName): number | undefined;
  /**
   * Counts `amount` (default 1) of a metered quota in its window, summed across the cluster's
   * nodes; when that passes the limit nothing is counted and the refusal is returned.
   */
  take(tenant: string | undefined, quota: MeteredQuota, amount?: number): SvcError | undefined;
  /** The refusal for a quota the plugin measures itself (queued_events, pubsub_bytes); `reason` says what was used of what. */
  refuse(tenant: string, quota: TenantQuotaName, reason: string, retryAfterS?: number): SvcError;
}

/** What the kernel offers plugins. */
/** A control op run through the control socket, as onControlRun reports it. */
export interface ControlRun {
  op: string;
  /** Its arguments as parsed by the op's schema. */
  args: unknown;
  actor: string;
  /** Why it failed; absent when it succeeded. */
  failure?: string;
}

/** A deployed version of a service as its deploy history numbers it (`svc service history`). */
export interface ServingVersion {
  version: number;
  /** sha256 of its source, hex. */
  hash: string;
  /** Every recorded version with this same source (a rollback deploys an earlier one again as a new number), this one included. */
  sameSource: number[];
}

export interface KernelApi {
  /** Tenants' quotas (SDK 1.11). */
  readonly tenantQuotas: TenantQuotaApi;
  readonly log: Logger;
  readonly store: DataStore;
  readonly clock: Clock;
  readonly dataDir: string;
  /** The server's environment (SVC_* overrides). */
  readonly env: NodeJS.ProcessEnv;
  server(): ServerConfig;
  config(): SvcConfig;
  /** Adds a config layer; those added during setup are in force before channels are first built. */
  addConfigLayer(layer: ConfigLayer): void;
  /** Validates the file plus the layers, `candidate` replacing the layer of its name, without applying anything. */
  proposeConfig(candidate?: ConfigLayer): ConfigCheck;
  /** Recomputes the config from the file and the layers now and applies it (refused: the running config stays). */
  reapplyConfig(source: string): Promise<ConfigCheck>;
  /** The effective config's data before validation: the file with the layers applied. */
  rawConfig(): RawConfig;
  /**
   * The running config's entries that tenants' own config adds (`tenants[].config`, `config_file`),
   * which rawConfig() does not hold: qualified, as written there, and where (`origin`:
   * `tenants[acme].config_file (tenants/acme.yaml).channel_rest[0]`). SDK 1.18.
   */
  tenantConfigEntries(): Array<{ section: string; entry: Record<string, unknown>; origin: string }>;
  /** The top-level sections' schemas (the kernel's and the enabled plugins'), for documentation and generic editors. */
  configSections(): Record<string, z.ZodType>;
  /** The control ops registered so far (by every plugin). */
  controlOps(): ControlOp[];
  /**
   * Called after each control op that changes something is run through the control socket (the
   * `svc` commands), whether it succeeded or not: what the admin plugin audits as `cli`. Ops run
   * through a plugin's own API are that plugin's to record. A listener's failure is logged, and
   * the op's answer stands. SDK 1.13.
   */
  onControlRun(listener: (run: ControlRun) => Promise<void>): void;
  /**
   * A line for the person who started the server, never logged (the admin password made at first
   * start): in `svc start`'s summary on its terminal, else on stdout. SDK 1.13.
   */
  tellOperator(text: string): void;
  /** Runs once the kernel's listener is up (`svc start`): plugins with listeners of their own start them here. */
  onListen(start: () => Promise<void>): void;
  /**
   * Runs when shutdown begins (SIGTERM), while the channel listener drains: stop starting new
   * work and let what runs finish, within the plugin's own wait. `stop` still follows.
   */
  onDrain(drain: () => Promise<void>): void;
  /** What a deployed service declares (verb handlers, typed input model, limits), or undefined. */
  serviceMeta(name: string): ServiceMeta | undefined;
  /**
   * The version of a service serving now, by its deploy history's number and content hash;
   * undefined when it is not deployed (or no version is recorded). SDK 1.13.
   */
  servingVersion(name: string): Promise<ServingVersion | undefined>;
  /** The enabled plugins' contributions, in load order (for generic readers such as the channels' OpenAPI document). */
  contributions(): readonly Contributions[];
  addRoute(route: PluginRoute): void;
  addHostCall(call: HostCall): void;
  addControl(op: ControlOp): void;
  /** The OpenAPI parts of the enabled plugins (Contributions.openapi). */
  openApiFragments(): OpenApiFragment[];
  /** Runs a deployed service outside an HTTP request (queue workers, background work). */
  invoke(request: InvokeRequest): Promise<InvokeResult>;
  /**
   * The request an event source's event becomes (sdk/plugin/events.ts): method POST, no
   * channel, `ctx.delivery.source` naming the source, the event's CID or a fresh one. SDK 1.5.
   */
  eventRequest(event: SourceEvent): InvokeRequest;
  /**
   * Runs an event's request now, through the one path every event takes: its input checked
   * against the service's typed model (unless a channel built it), the sandbox call with its
   * limits, the service's log lines, and the outcome. Never throws. SDK 1.5.
   */
  runEvent(request: InvokeRequest): Promise<EventOutcome>;
  /**
   * The request the kernel's own invoke step would send the channel's service for this exchange
   * (input, raw body, visible headers, auth, CID): JSON-safe, so it can be stored and run later.
   */
  invokeRequestOf(ex: Exchange): InvokeRequest;
  /** A fresh correlation ID, unique like those of requests (a queued attempt, background work). */
  newCid(): string;
  /** Named capabilities plugins share without importing each other's internals; typed by sdk/plugin/capabilities.ts. */
  provide<K extends CapabilityName>(name: K, value: Capabilities[K]): void;
  lookup<K extends CapabilityName>(name: K): Capabilities[K] | undefined;
  /** Where the server is in its life (readiness probes). SDK 1.1. */
  lifecycle(): Lifecycle;
  /** The sandbox's counters and gauges now: calls by service and outcome, restarts, rebuilds, quarantines (metrics). SDK 1.1. */
  sandboxStats(): SandboxStats;
  /**
   * Registers a connector's reporter of the connections it keeps (sdk/plugin/connections.ts):
   * read by health (/ready) and metrics whenever they ask. SDK 1.8.
   */
  addConnections(reporter: () => ConnectionReport[]): void;
  /** Every registered reporter's connections now. SDK 1.8. */
  connections(): ConnectionReport[];
  /**
   * Decodes a message's bytes with the decoder an enabled plugin contributes for `format`
   * (sdk/plugin/messages.ts). Throws MessageFormatError for a message the format refuses, and
   * SvcError INTERNAL for a format no enabled plugin decodes. SDK 1.8.
   */
  decodeMessage(format: string, body: Buffer, settings?: unknown): DecodedMessage;
}
