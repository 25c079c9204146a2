/**
 * The version of the plugin SDK (this folder's surface), by semver. A plugin declares the range
 * it was written for in `sdk` (e.g. '^1.0.0'); one outside the range is refused at load.
 * Bump the major on any change that can break a plugin that type-checked before, the minor on
 * additions (1.1: trace context on the Exchange, the invoke request and host calls; 1.2: the store
 * contract here with its change notifications (notify/listen), store strategies, `sqlTypes`,
 * ControlOp.readOnly; 1.3: `contributes.jsonBodyFormats`; 1.4: `contributes.jsonReplyFormats`; 1.5: event sources, `KernelApi.eventRequest` and
 * `runEvent`, the `events.durable` capability, `ctx.delivery.source`; 1.6: `ServiceMeta.invokableBy`,
 * service-to-service invoke; 1.7: the shared Redis connection helpers of redis.ts; 1.8: connectors: `KernelApi.addConnections`/`connections` (connections.ts),
 * message decoders (`contributes.messageFormats`, `KernelApi.decodeMessage`), `validateConfig`'s context, a source
 * event's payload, raw body and headers, `DurableEvents.deadLetter`; 1.9: mail and files: host runners of durable queues (`DurableEvents.addRunner`), the `connectors.sftp` folders, the schedule parsers of schedule/ (`parseDuration`, `formatDuration`, `Cron`): the scheduler's, so that other plugins check durations and cron expressions at config time), `DurableEvents.refuseReplay`); 1.10: tenants: `ControlOp.tenantScoped` and the op's `caller` (OpCaller); 1.11: tenants' quotas for plugins (`KernelApi.tenantQuotas`: metered outgoing calls and publishes, refusals of queued events and stored pub/sub bytes); 1.12: the op's `actor` (who runs it: an admin account or key, or `cli`); 1.13: `KernelApi.servingVersion` (a replay against a chosen version), `KernelApi.onControlRun` (the `svc` commands' ops, audited), `KernelApi.tellOperator` (a line for the startup summary, not the log); 1.14: `onFirstUse` (a client library loaded at its first use, lazy.ts), `isRedisErrorReply`; 1.15: `Deadline` (one attempt's abort signal, caller or timeout, released when the attempt ends: deadline.ts); 1.16: `contributes.storedSecrets` (write-only values kept in the store, set outside the config file, for the admin API); 1.17: `HostCallContext.timeLeftMs()` (what the calling service's time limit leaves a host call's waits); 1.18: `KernelApi.tenantConfigEntries()` (the entries tenants' own config adds, for the admin API).
 */
export const PLUGIN_SDK_VERSION = '1.18.0';
