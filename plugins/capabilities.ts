import type { AuthInfo, InvokeRequest, OpenApiFragment, SecurityEntry, TraceContext } from '../sdk/plugin/index.ts';
// The augmented module must be the one that declares Capabilities.
import '../sdk/plugin/capabilities.ts';

/**
 * The contracts bundled plugins offer each other through kernel.provide / kernel.lookup, so that
 * no plugin imports another plugin's internals. The kernel knows none of these names: to it a
 * capability is a string and a value. (The security family also shares per-type verifiers,
 * declared in plugins/security/shared/verifier.ts.)
 */
declare module '../sdk/plugin/capabilities.ts' {
  interface Capabilities {
    /**
     * Verifies an `Authorization: Basic ...` header against every basic_auth definition
     * (provided by the basic-auth plugin): the matched definition, or undefined. Timing-safe,
     * cached like channel authentication; answered synchronously on a cache hit (no promise per request).
     */
    'security.basic.authenticate': (authorization: string | undefined) => AuthInfo | undefined | Promise<AuthInfo | undefined>;
    /**
     * Adds a basic_auth definition that comes from code, not from config (provided by the basic-auth
     * plugin, used by pub/sub for its built-in test definition and for `svc demo`). Idempotent per name.
     * Afterwards 'security.basic.authenticate' matches it like a configured definition.
     */
    'security.basic.register': (definition: BasicDefinitionRegistration) => Promise<void>;
    /** The pub/sub engine (plugins/pubsub/engine), shared by the REST variants A and B. */
    'pubsub.engine': PubSubEngineApi;
    /** Secrets that are used, not only verified, encrypted at rest (plugins/secrets/vault). */
    'secrets.vault': Vault;
    /**
     * Named secrets' values for other plugins in the kernel process (provided by plugins/secrets/named):
     * a connector's password kept as a `secrets:` entry (`svc secret set`), never shown to services.
     */
    'secrets.named': { value(name: string): Promise<string | undefined> };
    /**
     * How a security type authenticates calls on outgoing connections: provided by that type's
     * plugin, used by the outgoing connection plugins (plugins/outgoing/).
     */
    'security.outgoing.basic_auth': OutgoingAuthFactory;
    'security.outgoing.apikey': OutgoingAuthFactory;
    'security.outgoing.bearer_token': OutgoingAuthFactory;
    'security.outgoing.ntlm': OutgoingAuthFactory;
    /** Pages the admin listener serves under /admin/ (provided by the admin plugin; the Dashboard adds its own). */
    'admin.pages': AdminPages;
    /**
     * Trace context and spans for work the hook chain does not see: outgoing calls and queued runs
     * (provided by the tracing plugin, plugins/observe/tracing). Optional: a plugin looks it up
     * when the work starts and, when it is absent, does the work untraced.
     */
    'observe.tracing': Tracing;
    /** Plain GET endpoints on the admin listener outside /admin/ (provided by the admin plugin): /metrics, /health, /ready. */
    'admin.endpoints': AdminEndpoints;
    /**
     * What plugins count, read by the metrics plugin (plugins/observe/metrics) when Prometheus
     * scrapes: each provided by the plugin it is named after. Counters count from the start.
     */
    'use-queue.stats': () => Promise<UseQueueStats>;
    'rate-limit.stats': () => RateLimitStats;
    'outgoing-rest.stats': () => OutgoingStats;
    'bearer-token.stats': () => TokenStats;
    'pubsub.stats': () => PubSubStats | Promise<PubSubStats>;
    'scheduler.stats': () => SchedulerStatsView;
    'cache.stats': () => CacheStats;
    'response-cache.stats': () => ResponseCacheStats;
    /** The OpenAPI 3.1 document of the channels, built from the config in force (plugins/observe/channels-openapi). */
    'openapi.channels': ChannelsOpenApi;
    /** This node's identity among those sharing the data store (plugins/cluster/nodes); /ready shows it. */
    'cluster.node': NodeIdentity;
    /**
     * Folders on the SFTP servers of the config's sftp_connection entries (provided by
     * plugins/connectors/sftp): the file pickup (plugins/connectors/file-pickup) polls them as
     * it polls local folders, both through the one FileFolder interface below.
     */
    'connectors.sftp': SftpFolders;
  }
}

/** See 'cluster.node'. `id` is new at every start; `name` is the operator's (or host:port). */
export interface NodeIdentity {
  readonly id: string;
  readonly name: string;
  /** Milliseconds since the epoch. */
  readonly startedAt: number;
  /**
   * Ids of the nodes up now on the data store (heartbeat on time, not stopped), this one
   * included: work a node left behind (queued events it owned) is taken over once it is not.
   */
  liveNodes(): Promise<ReadonlySet<string>>;
}

/** A node as the `cluster.nodes` control op lists it. */
export interface NodeInfo {
  id: string;
  name: string;
  host: string;
  pid: number;
  /** svc's version and the Node.js version it runs on. */
  version: string;
  runtime: string;
  started_at: string;
  heard_at: string;
  /** up: heartbeat on time; down: heartbeat late (it died without stopping); stopped: shut down cleanly. */
  state: 'up' | 'down' | 'stopped';
  self: boolean;
}

/** See 'observe.tracing'. Both methods are cheap when nothing is exported (no span is made). */
export interface Tracing {
  /**
   * One HTTP request about to leave, on behalf of work in the trace `parent` (HostCallContext.trace):
   * sets its `traceparent` (and `tracestate`) header, and starts its client span when spans are
   * exported. Call it once per attempt, before credentials are added; end the span it returns.
   */
  outgoing(parent: TraceContext | undefined, request: OutgoingRequest, call: OutgoingCallInfo): OutgoingSpan | undefined;
  /**
   * One run of a queued event (`request` as it was stored, its `trace` that of the request that
   * queued it): the run's span when spans are exported, undefined otherwise (the run then goes on
   * with the stored trace context). Put its `trace` on the invoke request; end it with the outcome.
   */
  queuedRun(request: InvokeRequest, run: QueuedRunInfo): QueuedRunSpan | undefined;
}

export interface OutgoingCallInfo {
  connection: string;
  /** The connection's `url_path` template (the span's name and `url.template`). */
  template: string;
  /** 1 for the first attempt. */
  attempt: number;
}

export interface OutgoingSpan {
  /** The upstream's status, or why there is none (a failure kind: timeout, connection...). */
  end(outcome: { status: number } | { failure: string }): void;
}

export interface QueuedRunInfo {
  /** The channel whose queue it is; null for background work (invokeAsync). */
  channel: string | null;
  /** This attempt's CID. */
  cid: string;
  /** The CID the event was accepted with (the request that queued it). */
  eventCid: string;
  attempt: number;
}

export interface QueuedRunSpan {
  trace: TraceContext;
  end(outcome: { ok: true } | { ok: false; kind: string }): void;
}

/**
 * Endpoints other plugins serve on the admin listener, outside /admin/ (so outside the admin
 * API's login): probes and scrapes, whose callers are machines. Each does its own checks.
 * Every answer carries X-Svc-CID; a thrown SvcError becomes svc's error body with the CID.
 */
export interface AdminEndpoints {
  /** `path`: exact, e.g. `/metrics`; never `/admin` or under it. GET (and HEAD). */
  add(path: string, endpoint: AdminEndpoint): void;
}
export type AdminEndpoint = (request: AdminEndpointRequest) => AdminEndpointReply | Promise<AdminEndpointReply>;
export interface AdminEndpointRequest {
  cid: string;
  /** Names lower-case. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
}
export interface AdminEndpointReply {
  status: number;
  contentType: string;
  body: string;
}

export interface UseQueueStats {
  /** Every queue with events (pending, running or dead): a channel's, or `null`, the background queue. */
  queues: Array<{ channel: string | null; depth: number; running: number; deadLetters: number }>;
}
export interface RateLimitStats {
  /** Requests refused with 429, by channel (or plugin route). */
  denials: Array<{ channel: string; count: number }>;
  /** Connections dropped by a `disallowed` range, by channel. */
  drops: Array<{ channel: string; count: number }>;
  /** Decisions on_redis_error took because Redis could not (redis policy), by what it did: allow or deny. */
  redisErrors?: Array<{ outcome: string; count: number }>;
}
export interface OutgoingStats {
  /** Calls services made, by connection and final status: the HTTP status, or why there was none (timeout, connection, budget, cancelled, too_large, refused). */
  calls: Array<{ connection: string; status: string; count: number }>;
}
export interface TokenStats {
  /** Token requests to authorization servers, by bearer_token definition and outcome (ok, failed, cancelled). */
  requests: Array<{ security: string; outcome: string; count: number }>;
}
export interface SchedulerStatsView {
  /** Runs this node saw end (succeeded, failed) or declined (skipped, missed), by job. */
  runs: Array<{ job: string; outcome: string; count: number }>;
  /** How late this node took ticks: counts per bucket (upper bounds in ms; the last one is the overflow), their sum and count. */
  lateness: { readonly buckets: readonly number[]; readonly sumMs: number; readonly taken: number };
  /** Upper bounds of the lateness buckets, ms. */
  latenessBoundsMs: readonly number[];
}
export interface CacheStats {
  /** Services' gets on each named cache: found (hits) or not (misses); entries and bytes held now by memory caches. */
  caches: Array<{ cache: string; backend: string; hits: number; misses: number; entries?: number; bytes?: number }>;
}
export interface ResponseCacheStats {
  /** GET and HEAD requests on channels with response_cache, by channel and outcome (HIT, MISS, BYPASS). */
  requests: Array<{ channel: string; result: string; count: number }>;
}
export interface PubSubStats {
  /** Messages queued for each subscription now. */
  subscriptions: Array<{ endpoint: string; topic: string; depth: number }>;
}

/** The channels' OpenAPI document, as of now: the config in force and the services deployed. */
export interface ChannelsOpenApi {
  document(): Record<string, unknown>;
  /** Its paths and components, for a document that also holds other routes (the admin's interface specification). */
  fragment(): OpenApiFragment;
}

/**
 * Static pages on the admin listener. They are public (they hold no data: everything they show
 * comes from the admin API, which checks the session), so they may only be code and markup.
 */
export interface AdminPages {
  /** `path` under /admin/ (e.g. `/admin/`, `/admin/app.js`); never under /admin/api/. */
  add(path: string, page: AdminPage): void;
}
export interface AdminPage {
  contentType: string;
  body: string | Buffer;
}

/** The capability of each security type usable on outgoing connections. */
export const OUTGOING_AUTH_CAPABILITY = {
  basic_auth: 'security.outgoing.basic_auth',
  apikey: 'security.outgoing.apikey',
  bearer_token: 'security.outgoing.bearer_token',
  ntlm: 'security.outgoing.ntlm',
} as const;

/** A request about to leave on an outgoing connection. Header names are lower-case. */
export interface OutgoingRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

export interface OutgoingResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface OutgoingAuthContext {
  cid: string;
  /** `auth_scopes` of the call, overriding the definition's scopes (Bearer token). */
  scopes: readonly string[] | undefined;
  /** Aborted when the calling request ends or its time limit fires. */
  signal: AbortSignal;
  /**
   * Longest this call may wait for credentials (a token another call is fetching, or its own
   * request): what its retries' budget and its service's time limit leave. Past it the authorizer
   * fails with GATEWAY_TIMEOUT. Absent: no limit but the signal.
   */
  waitMs?: number;
}

/**
 * One outgoing security definition at work. Credentials are added here, on the host side: they
 * never enter the sandbox, and nothing here logs them.
 */
export interface OutgoingAuthorizer {
  /** Adds credentials to the request (headers); may wait, e.g. for a token request. */
  authorize(request: OutgoingRequest, context: OutgoingAuthContext): void | Promise<void>;
  /** The upstream answered 401: drop what is cached; true to send the request once more. */
  refused?(request: OutgoingRequest, context: OutgoingAuthContext): boolean | Promise<boolean>;
  /**
   * For schemes that authenticate the TCP connection itself (NTLM): sends the request on a
   * connection of the authorizer's own and returns the response; `authorize` is then not called.
   */
  send?(request: OutgoingRequest, context: OutgoingAuthContext & { timeoutMs: number }): Promise<OutgoingResponse>;
  /** The definition was removed or changed: release connections and caches. */
  close?(): Promise<void>;
}

/** Builds the authorizer of one `security[]` entry of the type. */
export type OutgoingAuthFactory = (definition: SecurityEntry) => OutgoingAuthorizer;

/** Encrypted named values, by owner (a plugin or family) and name. */
export interface Vault {
  get(owner: string, name: string): Promise<string | undefined>;
  /** Durable once resolved. */
  put(owner: string, name: string, value: string): Promise<void>;
  delete(owner: string, name: string): Promise<void>;
  names(owner: string): Promise<string[]>;
}


/** A basic_auth definition registered by a plugin (see 'security.basic.register'). */
export interface BasicDefinitionRegistration {
  name: string;
  username: string;
  /**
   * 'builtin': exists in every environment. The first time it is seen, the basic-auth plugin
   *   generates a random UUID4 password, stores it (hashed) and keeps it across restarts;
   *   `svc secdef set-password <name>` changes it like any other definition's.
   * 'ephemeral': uses `password` as given, held in memory only; gone at restart (`svc demo`).
   */
  lifetime: 'builtin' | 'ephemeral';
  /** Required for 'ephemeral', ignored for 'builtin'. */
  password?: string;
}

/** One message as a subscriber receives it. Times are milliseconds since the epoch. */
export interface PubSubMessageView {
  msgId: string;
  topic: string;
  data: unknown;
  /** Bytes of data (UTF-8 of a string, or of its JSON text). */
  size: number;
  mimeType: string;
  priority: number;
  /** Seconds; undefined when the message never expires. */
  expiration: number | undefined;
  expiresAt: number | undefined;
  pubTime: number;
  /** When the server received the publication. */
  recvTime: number;
  correlId: string | undefined;
  inReplyTo: string | undefined;
  extClientId: string | undefined;
  hasGd: boolean;
  subKey: string;
  /** Earlier deliveries that failed (the response could not be written). */
  deliveryCount: number;
}

export interface PubSubPublishRequest {
  topic: string;
  data: unknown;
  mimeType: string;
  /** 0 (lowest) to 9. */
  priority: number;
  /** Seconds; undefined = never expires. */
  expiration: number | undefined;
  correlId?: string | undefined;
  inReplyTo?: string | undefined;
  extClientId?: string | undefined;
  hasGd: boolean;
  /** Publication time claimed by the publisher; the receive time when undefined. */
  pubTime?: number | undefined;
  /** Endpoint name, or `service:<name>` for SDK publishes (logs and audit). */
  publisher: string;
}

/**
 * Messages taken from queues by one get. They are gone from the queues for every other getter;
 * ack() once the response was written deletes them, nack() puts them back with deliveryCount + 1.
 * Exactly one of the two must be called, once.
 */
export interface PubSubDelivery {
  readonly messages: readonly PubSubMessageView[];
  ack(): void;
  nack(): void;
}

export interface PubSubEndpointView {
  name: string;
  /** The tenant it belongs to (its name is `<tenant>/…`): its clients name that tenant's topics, short. Undefined: the platform's. */
  tenant: string | undefined;
  canPublish(topic: string): boolean;
  canSubscribe(topic: string): boolean;
}

export interface PubSubEngineApi {
  /** The endpoint whose `security` names this basic_auth definition. */
  endpointBySecurity(definition: string): PubSubEndpointView | undefined;
  hasTopic(topic: string): boolean;
  /** Resolves once the message is queued (GD: once it is on stable storage). Throws SvcError (QUEUE_FULL...). */
  publish(request: PubSubPublishRequest): Promise<{ msgId: string }>;
  /** Idempotent: `created` false and the existing key when already subscribed. */
  subscribe(endpoint: string, topic: string): Promise<{ subKey: string; created: boolean; queueDepth: number }>;
  /** Resolves whether a subscription existed. */
  unsubscribe(endpoint: string, topic: string): Promise<boolean>;
  /**
   * The three below answer at once from memory on a single node (SQLite) and by a promise when the
   * queues live in PostgreSQL, shared by several nodes: callers await them.
   */
  subscriptionKey(endpoint: string, topic: string): string | undefined | Promise<string | undefined>;
  /** Keys of every subscription of the endpoint (variant B: one queue per user). */
  subscriptionKeys(endpoint: string): string[] | Promise<string[]>;
  /**
   * Takes messages from the given subscriptions; concurrent getters never share one (in memory the
   * take is synchronous; in PostgreSQL rows are claimed with FOR UPDATE SKIP LOCKED).
   * 'lifo': most recently published first; 'priority': highest priority first, oldest first within one.
   * Messages whose data would push the total past maxBytes are left for a later get.
   */
  take(subKeys: readonly string[], options: { order: 'lifo' | 'priority'; maxMessages: number; maxBytes: number }): PubSubDelivery | Promise<PubSubDelivery>;
}

/** One entry of a folder listing. `symlink` is a link itself, not followed. */
export interface FolderEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  /** Last modification, milliseconds since the epoch. */
  mtimeMs: number;
}

/**
 * A folder tree files are picked up from and moved within: a local folder or one on an SFTP
 * server, behind one interface. Paths are relative to the folder's root, `/`-separated; the
 * implementation refuses any that would leave the root (`..`, absolute paths, NUL) with
 * SvcError BAD_REQUEST, and never follows a symlink out of it. Errors are SvcError
 * (NOT_FOUND, PAYLOAD_TOO_LARGE, SERVICE_UNAVAILABLE for a connection that failed).
 */
export interface FileFolder {
  /** Where the root is, for logs and /ready: `sftp://partner/outbound`, `/srv/drop`. */
  readonly describe: string;
  list(dir: string): Promise<FolderEntry[]>;
  /** The whole file; PAYLOAD_TOO_LARGE past maxBytes, without reading the rest. */
  read(path: string, maxBytes: number): Promise<Buffer>;
  /** Replaces `to` if it exists (done and error folders keep the newest of a name). */
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
  /** Creates the folder and its parents; nothing when it exists. */
  mkdir(path: string): Promise<void>;
  /** Whether a file or folder is at path (markers). */
  exists(path: string): Promise<boolean>;
  /** Hands the folder's connection back (to a pool, or closes it). The folder is not used after. */
  release(): Promise<void>;
}

export interface SftpFolders {
  /** Whether the config has an sftp_connection of that name. */
  has(connection: string): boolean;
  /**
   * A folder at `root` (relative to the connection's own root) on a session of the connection,
   * opened now (its host key checked against the pinned one). SERVICE_UNAVAILABLE when the server
   * cannot be reached or its host key differs.
   */
  open(connection: string, root: string): Promise<FileFolder>;
}

declare module '../sdk/plugin/capabilities.ts' {
  interface Capabilities {
    /**
     * Durations and cron expressions read as the scheduler reads its jobs' (provided by
     * plugins/scheduler), for plugins that poll on a schedule (the file pickup): they never import
     * the scheduler's internals.
     */
    'scheduler.timing': SchedulerTiming;
  }
}

/** A poll schedule: `every` (a duration: 30s, 5m…), `cron` (in `timezone`, default the server's), or both (whichever falls first). */
export interface TimingSpec {
  every?: string | number;
  cron?: string;
  timezone?: string;
}

export interface Timing {
  /** The first tick strictly after `afterMs` (ms since the epoch), or undefined when none follows. */
  next(afterMs: number): number | undefined;
}

export interface SchedulerTiming {
  /** The spec's ticks, or why it is not a valid one. */
  parse(spec: TimingSpec): Timing | { error: string };
}
