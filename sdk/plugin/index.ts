/**
 * The plugin SDK: the one surface a plugin imports (`svc/sdk/plugin`). A plugin is plain data,
 * `definePlugin({ name, kind, version, configSchema, hooks, ... })`, whose hooks receive an
 * Exchange and whose setup receives the KernelApi. Services never see this entry: the sandbox
 * refuses every import but `svc/sdk`.
 *
 * The kernel implements what is declared here; plugins depend on this file, never on kernel/.
 */
export { definePlugin, PLUGIN_KINDS } from './contract.ts';
export type {
  ChannelBodyDoc,
  ChannelOpenApi,
  CliCommand,
  CliEnv,
  ConfigCheck,
  ConfigIssue,
  ConfigLayer,
  Contributions,
  ControlOp,
  ControlRun,
  ErrorHookFn,
  HookContext,
  HookFactory,
  HookFn,
  HostCall,
  HostCallContext,
  HostCallLog,
  KernelApi,
  Lifecycle,
  MeteredQuota,
  OpCaller,
  OpenApiFragment,
  Plugin,
  PluginKind,
  PluginRoute,
  RawConfig,
  ServingVersion,
  StoredSecrets,
  TenantQuotaApi,
  TenantQuotaName,
  ValidationContext,
} from './contract.ts';
export { HOOK_NAMES, type HookName } from './hooks.ts';
export type { Exchange, ResponseDraft, UploadedFile } from './exchange.ts';
export type { AuthInfo, ChannelFields, ConfigSections, ServerFields } from './extensions.ts';
export { ERRORS, IssuesError, SvcError, errorBody, type ErrorCode, type FieldIssue } from './errors.ts';
export { clientErrorReply, frameworkErrorReply, listenerTimeouts, type ClientErrorLog, type FrameworkReply } from './client-error.ts';
export { listenerDrain, type ListenerDrain } from './listener-drain.ts';
export type { Channel, HttpMethod, SecurityEntry, ServerConfig, SvcConfig } from './config.ts';
export { APPLIES_WHEN_KEY, HTTP_METHODS, LIST_COLUMN_KEY, appliesWhen, bundledPluginOn, listColumn, securityNameSchema } from './config.ts';
export type { DataStore, Dialect, Migration, Queryable, RunResult, SqlTypes, StoreStrategy } from './store.ts';
export { onFirstUse } from './lazy.ts';
export { Deadline } from './deadline.ts';
export { FailureReport, closeRedis, connectRedis, createRedisConnection, deleteKeysUnder, isRedisErrorReply, maskRedisUrl, type RedisConnection } from './redis.ts';
export { ChangeListeners, MAX_NOTIFY_PAYLOAD, StoreUnavailableError, isUniqueViolation, redactStoreUrl, sqlTypes } from './store.ts';
export type { DeliveryInfo, FieldDescriptor, InvokeRequest, InvokeResult, SandboxStats, ServiceMeta, TraceContext } from './protocol.ts';
export { systemClock, type Clock } from './clock.ts';
export { ZoneTime, isTimeZone } from './zone.ts';
/** Durations (`30s`, `1h30m`) and cron expressions as the scheduler reads them: pure parsers any plugin may check its config with (SDK 1.9). */
export { Cron, CronError } from './schedule/cron.ts';
export { formatDuration, parseDuration } from './schedule/duration.ts';
export type { DurableAttempt, DurableEvents, DurableListener, DurableQueueSettings, DurableSettlement, EventOutcome, EventSourceInfo, SourceEvent } from './events.ts';
export { RUNNER_SERVICE_MARK, type DurableRunner, type ReplayCheck } from './events.ts';
export type { Capabilities, CapabilityName } from './capabilities.ts';
export { ConnectionMeter, LATENCY_BOUNDS_S, countKey, type ConnectionMeterView, type ConnectionReport } from './connections.ts';
export { MessageFormatError, type DecodedMessage, type MessageDecoder } from './messages.ts';
export { PLUGIN_SDK_VERSION } from './version.ts';
export { controlOrStore, usage } from './cli.ts';
export { jsonSchemaOf, openApiDocument } from './openapi.ts';
export {
  HMAC_ALGORITHMS,
  SIGNATURE_ENCODINGS,
  hmac,
  signatureMatches,
  signedDataSchema,
  type HmacAlgorithm,
  type SignatureEncoding,
} from './signature.ts';
export { JSON_MAX_DEPTH, JSON_MAX_DEPTH_CEILING, JsonBodyError, readJsonBody } from './json.ts';
export {
  SCRYPT_PARAMS,
  hashSecret,
  isScryptHash,
  parseScryptHash,
  randomSecret,
  verifySecret,
  type ScryptHash,
  type ScryptParams,
} from './secret-hash.ts';
/** YAML text → plain data with `${NAME}` substituted, exactly as the config file is read (`svc import`). */
export { ConfigError, readSource as readConfigSource } from './config-source.ts';
export { TENANT_NAME, TENANT_SEPARATOR, hostPath, joinUrl, localName, qualify, qualifyEntry, scopedFor, scopedRef, scopedRefOf, tenantOf, walkRefs, type FoundRef } from './tenants.ts';
