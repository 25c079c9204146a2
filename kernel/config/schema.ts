import { z } from 'zod';

/**
 * The kernel's own part of the config schema. Plugins extend it at load time
 * (kernel/config/compose.ts): channel fields, security types, whole sections.
 * Field descriptions feed the docs, and later the Dashboard and OpenAPI.
 */

import { HTTP_METHODS } from '../../sdk/http.ts';
import { isTimeZone } from '../../sdk/plugin/zone.ts';
import { listColumn, securityNameSchema, type ChannelBase, type PluginsConfig, type ServerBase, type TenantConfig } from '../../sdk/plugin/config.ts';
import { scopedRef, TENANT_NAME } from '../../sdk/plugin/tenants.ts';

/** The kernel's import point for the config types, which the plugin SDK declares (sdk/plugin/config.ts). */
export {
  HTTP_METHODS,
  securityNameSchema,
  type Channel,
  type ChannelBase,
  type HttpMethod,
  type KernelConfig,
  type PluginsConfig,
  type SandboxConfig,
  type SecurityEntry,
  type ServerConfig,
  type SvcConfig,
  type TenantConfig,
  type TenantQuotas,
} from '../../sdk/plugin/config.ts';

/** Top-level sections the kernel reads itself; plugins add theirs (Contributions.sections). */
export const KERNEL_SECTIONS = ['server', 'plugins', 'security', 'channel_rest', 'tenants'] as const;

const MiB = 1024 * 1024;

export const sandboxSchema = z
  .object({
    workers: z.number().int().min(1).max(64).default(2).describe('Sandbox processes running service isolates; a crash costs only the requests in flight on one of them.'),
    memory_mb: z.number().int().min(8).max(4096).default(64).describe('Default isolate memory limit per service, in MB (a service may ask for less or more, up to max_memory_mb).'),
    max_memory_mb: z.number().int().min(8).max(8192).default(512).describe('Ceiling for a service-declared memory limit, in MB.'),
    timeout_ms: z.number().int().min(1).max(600_000).default(5_000).describe('Default wall-clock limit of one service call, in ms.'),
    max_timeout_ms: z.number().int().min(1).max(3_600_000).default(60_000).describe('Ceiling for a service-declared time limit, in ms.'),
    max_output_bytes: z.number().int().min(1024).max(512 * MiB).default(16 * MiB).describe('Largest service output (serialized), in bytes.'),
    spill_at: z
      .number()
      .int()
      .min(1)
      .default(128)
      .describe("Calls in flight on a service's home sandbox process before its calls spill to the others (a service's calls batch best in one process)."),
    idle_ms: z
      .number()
      .int()
      .min(0)
      .default(30_000)
      .describe("A service's isolate in a sandbox process that had no call for this long is dropped to free its memory, and built again on its next call (which waits for the build); 0 keeps every isolate."),
    recycle_idle_ms: z
      .number()
      .int()
      .min(0)
      .default(60_000)
      .describe(
        'A sandbox process that had no call for this long, and is resident above recycle_above_mb, is replaced by a fresh one: the memory a load made it take (kept by the C allocator after the load) goes back to the system. The fresh one deploys every service first; calls go to the old one until then. 0 never replaces one. Linux only (read from /proc).',
      ),
    recycle_above_mb: z.number().int().min(1).default(64).describe('Resident memory (RSS), in MB, above which an idle sandbox process is replaced (see recycle_idle_ms).'),
    max_calls_per_isolate: z
      .number()
      .int()
      .min(1)
      .max(65_536)
      .default(2048)
      .describe(
        "Calls one service's isolate holds at once, those waiting on an outgoing call or on a service they invoked included; more wait in the sandbox process, outside the isolate's heap. Counted per invoke depth (calls from channels, calls they invoke, and so on), so callers waiting on callees never take the room the callees need. At most 128 of them run code at a time.",
      ),
    tenant_workers: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(2)
      .describe(
        "Sandbox processes the tenants' services share (docs/tenants.md), apart from the `workers` that run the platform's own services; started with the first tenant that runs there (`processes: 0`) and stopped when none does. A tenant with `processes` has processes of its own instead.",
      ),
    tenant_demote_cores: z
      .number()
      .min(0)
      .max(1024)
      .optional()
      .describe(
        "A tenant's own sandbox processes (`processes` 1 or more) run at the normal CPU priority until their threads together use more than this many cores, averaged over a second, or one of them has its isolates meet their memory limit 3 times within 10 s (a memory bomb spends little CPU); they are then lowered to the lowest (nice 19, every thread) for the rest of their lives, and for ten minutes the tenant's new processes start there, as they do after one of them died. So a busy tenant (loops, memory bombs, floods of work) never takes a core from a well-behaved one, nor from the kernel. The processes tenants share always run at the lowest priority. 0 starts every tenant's process at the lowest priority. Not set: a quarter of the node's cores, at least 0.5. Linux only (read from /proc).",
      ),
  })
  .strict()
  .default({ tenant_workers: 2, workers: 2, memory_mb: 64, max_memory_mb: 512, timeout_ms: 5_000, max_timeout_ms: 60_000, max_output_bytes: 16 * MiB, spill_at: 128, idle_ms: 30_000, recycle_idle_ms: 60_000, recycle_above_mb: 64, max_calls_per_isolate: 2048 });

export const serverSchema = z
  .object({
    host: z.string().min(1).default('127.0.0.1').describe('Address the channel listener binds to.'),
    port: z.number().int().min(0).max(65535).default(17010).describe('Port of the channel listener; SVC_PORT overrides it.'),
    data_dir: z.string().min(1).default('./data').describe('Directory of the SQLite store and other state; relative to the working directory (run svc commands where the server runs: one that would create the store says so on stderr).'),
    store: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The data store: absent, the SQLite file svc.db under data_dir (one node); a file path (relative to the working directory), that SQLite file; a postgres:// or postgresql:// URL, PostgreSQL (several nodes on one database; plugins/store/postgres). Put the password in PGPASSWORD or ${VARIABLE}, not in the file; it is never logged. SVC_STORE overrides it.",
      ),
    services_dir: z.string().min(1).default('./services').describe('Directory of service files; relative to the working directory.'),
    timezone: z
      .string()
      .default('UTC')
      .refine((tz) => isTimeZone(tz), { message: 'not an IANA time zone name' })
      .describe('IANA time zone for rate-limit time ranges and calendar intervals.'),
    trusted_proxies: z
      .array(z.string())
      .optional()
      .describe('CIDR ranges whose X-Svc-Forwarded-For / X-Forwarded-For headers are honoured; absent means every peer is trusted.'),
    log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('Log level.'),
    log_time: z
      .enum(['epoch', 'iso'])
      .default('epoch')
      .describe(
        "The `time` of each JSON log line: `epoch`, milliseconds since 1970 (pino's default, cheapest), or `iso`, an ISO 8601 string in UTC (`2026-11-29T12:00:01.123Z`), as log shippers without a parser for epochs want. Read when the server starts.",
      ),
    body_limit: z.number().int().min(0).max(1024 * MiB).default(MiB).describe('Default request body limit of a channel, in bytes.'),
    step_timeout_ms: z
      .number()
      .int()
      .min(0)
      .max(3_600_000)
      .default(0)
      .describe(
        "Longest a request may wait on one step of its channel's chain once it has arrived whole (a body being parsed, a credential checked against the store, a plugin's handler), in ms: past it the request is answered 503 STEP_TIMEOUT with its CID and the channel is logged. The service call has its own limit (sandbox.timeout_ms). A guard against a plugin step that never finishes; 0 (the default) leaves it off, as it measured ≈ 5% of durable-publish throughput.",
      ),
    refusal_pause_ms: z
      .number()
      .int()
      .min(0)
      .max(4_000)
      .default(1_000)
      .describe(
        "After answering 429 (a rate limit, a tenant's quota) or a quarantined service's 503 on a keep-alive connection, how long the server waits before it reads that connection's next request, in ms (at most the answer's Retry-After; less up to a quarter at random, so connections refused together are not read again together): a client that resends at once, as a flood does, then costs the server one refusal per pause, not thousands. A service's call that a tenant's quota refuses (an outgoing call, invoke, invokeAsync, publish) is answered after the same pause, for the same reason. Not applied to the connections of `trusted_proxies`, which carry other clients' requests; behind a proxy that pools connections, list it there or set 0 (off).",
      ),
    request_timeout_ms: z
      .number()
      .int()
      .min(0)
      .max(3_600_000)
      .default(120_000)
      .describe(
        'Longest a client may take to send a whole request, headers and body, in ms: past it the request is answered 408 with its CID and its connection closed, so a client that sends slowly cannot hold a connection for good. Read when a listener starts (the channel and admin listeners); 0 turns the limit off.',
      ),
    drain_timeout_ms: z
      .number()
      .int()
      .min(0)
      .max(3_600_000)
      .default(10_000)
      .describe(
        'Shutdown deadline (SIGTERM or SIGINT), in ms: how long requests in flight and queued work that runs get to finish before the process exits 1, logging what it cut (docs/operations.md).',
      ),
    invoke_max_depth: z
      .number()
      .int()
      .min(1)
      .max(32)
      .default(8)
      .describe(
        "How deep services may invoke each other (the SDK's invoke): a service a channel or the queue runs is at depth 0, one it invokes at 1; an invoke past this depth is refused with INVOKE_DEPTH.",
      ),
    sandbox: sandboxSchema,
  })
  .strict();

const pluginEntrySchema = z.union([
  z.boolean(),
  z
    .object({
      enabled: z.boolean().default(true).describe('Whether the plugin is loaded.'),
      module: z.string().optional().describe('Module path (relative to the config file) or package name of a third-party plugin.'),
      config: z.unknown().optional().describe("Options validated by the plugin's configSchema."),
    })
    .strict(),
]);

export const pluginsSchema = z
  .record(z.string(), pluginEntrySchema)
  .default({})
  .describe('Plugins by name: true/false, or {enabled, module, config}. Bundled plugins not named here are enabled.');

/** URL paths: `/a/{x}/b`, no query string, no empty or duplicate parameter names. */
export const urlPathSchema = z
  .string()
  .startsWith('/', 'must start with /')
  .refine((p) => !p.includes('?') && !p.includes('#'), 'must not contain a query string or fragment')
  // Clients resolve dot segments away before sending (RFC 3986 5.2.4): such a route is never reached as written, and a tenant's would look like it leaves its prefix.
  .refine((p) => !p.split('/').some((s) => s === '.' || s === '..'), "must not contain '.' or '..' segments")
  .refine((p) => {
    const names = [...p.matchAll(/\{([^}]*)\}/g)].map((m) => m[1]);
    return names.every((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n ?? '')) && new Set(names).size === names.length;
  }, 'parameters must be {name} with distinct identifier names');

export const channelBaseShape = {
  name: z.string().min(1).describe('Label of the channel; unique.'),
  url_path: listColumn(urlPathSchema, 1, 'URL path').describe('URL path; {name} parts capture path parameters.'),
  service: listColumn(scopedRef(z.string().min(1), { to: ['services'] }), 3, 'Service').describe('Name of the service (its file name in services_dir, without extension).'),
  method: listColumn(z.enum(HTTP_METHODS), 2, 'Method')
    .optional()
    .describe('The one HTTP method accepted; any method when absent.'),
  data_format: listColumn(z.string().min(1), 5, 'Data format').describe('Data format: one an enabled format plugin handles (bundled: json, xml, hl7, form, multipart, csv, none).'),
  security: listColumn(scopedRef(z.string({ error: "required: name a security definition or group, or say 'none' explicitly" }).min(1), { keep: ['none'], to: ['security', 'groups'] }), 4, 'Security')
    .describe("Security definition or group name, or 'none' for no server-side authentication."),
  url_params_pri: z
    .enum(['qs_over_path', 'path_over_qs'])
    .default('qs_over_path')
    .describe('Which wins when a query-string and a path parameter share a name.'),
  params_pri: z
    .enum(['url_over_msg', 'msg_over_url'])
    .default('url_over_msg')
    .describe('Whether URL parameters beat payload fields of the same name.'),
  body_limit: z.number().int().min(0).optional().describe('Request body limit in bytes; server.body_limit when absent.'),
};

export const channelBaseSchema = z.object(channelBaseShape).strict();

const quota = (what: string) => z.number().int().min(1).optional().describe(`${what}; no limit when absent.`);

export const tenantQuotasSchema = z
  .object({
    cpu_ms_per_minute: quota("CPU time the tenant's service isolates may use in any minute, in ms (the isolates' own CPU time, not wall time); past it its calls are refused 429 TENANT_QUOTA until the minute's use falls under it"),
    concurrent_calls: quota("Calls of the tenant's services running at once on this node; more are refused 429 TENANT_QUOTA"),
    memory_mb: quota("Memory limit of each of the tenant's isolates, in MB: a ceiling for what its services declare and for sandbox.memory_mb"),
    outgoing_calls_per_minute: quota("Calls the tenant's services may make through its outgoing connections (REST and the connectors) in any minute, across the cluster; past it a call fails with 429 TENANT_QUOTA in the service, nothing is sent"),
    publishes_per_second: quota("Messages the tenant may publish in any second (its pub/sub endpoints and its services), across the cluster; more are refused 429 TENANT_QUOTA"),
    queued_events: quota("Events of the tenant's services waiting in the Use queue (accepted, not yet delivered or dead-lettered); past it channels with use_queue answer 429 TENANT_QUOTA and invoke_async fails"),
    pubsub_bytes: quota("Bytes of message data the tenant's pub/sub topics and subscriber queues may hold; a publish past it is refused 429 TENANT_QUOTA"),
  })
  .strict()
  .default({});

export const tenantSchema = z
  .object({
    name: z.string().regex(TENANT_NAME, 'lowercase letters, digits, _ and -, starting with a letter, at most 32').describe("The tenant's name: the first part of its resources' qualified names (`acme/orders`)."),
    services_dir: z.string().min(1).optional().describe("Directory of the tenant's service files; relative to the working directory. Default: tenants/<name>/services."),
    config_file: z
      .string()
      .min(1)
      .optional()
      .describe("A YAML file of the tenant's own sections (channel_rest, security, outgoing_rest, the connectors…), with short names the server qualifies; relative to the main config file."),
    config: z
      .record(z.string(), z.array(z.unknown()))
      .optional()
      .describe('The same sections written here, in the main file (a small install): section name to its entries, short names.'),
    url_prefix: z
      .string()
      .regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'a path such as /t/acme, without a trailing slash')
      .optional()
      .describe("Where the tenant's REST channels live: every url_path of its channels is under it. Default: /t/<name>."),
    processes: z
      .number()
      .int()
      .min(0)
      .max(16)
      .default(0)
      .describe("Trust level: 0 runs the tenant's services in the sandbox processes tenants share (sandbox.tenant_workers); 1 or more gives it that many processes of its own, so a crash it causes costs no other tenant a request."),
    weight: z.number().int().min(1).max(100).default(1).describe("Its share of the tenants' sandbox processes when they are saturated, against the other tenants' weights (weighted fair queueing)."),
    quotas: tenantQuotasSchema.describe("The tenant's limits; each is per node unless docs/tenants.md says otherwise."),
  })
  .strict();

export const tenantsSchema = z
  .array(tenantSchema)
  .default([])
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((t, i) => {
      if (seen.has(t.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `tenant '${t.name}' is declared twice` });
      seen.add(t.name);
    });
  })
  .describe('Tenants: untrusted services side by side, each with its own services, resources, quotas and administrators (docs/tenants.md).')
  .meta({ title: 'Tenants' });

export const securityBaseShape = {
  name: securityNameSchema.describe('Unique name of the definition.'),
  type: listColumn(z.string().min(1), 1, 'Type').describe('Security type, e.g. basic_auth or apikey.'),
};

/** Same when A and B are one type, not merely assignable either way. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assert<T extends true> = T;

/**
 * Compile-time checks that the schemas produce exactly the shapes plugins are promised
 * (sdk/plugin/config.ts): a field added, dropped or retyped on one side fails `tsc`.
 */
export type SchemasMatchTheContract = [
  Assert<Same<z.output<typeof channelBaseSchema>, ChannelBase>>,
  Assert<Same<z.output<typeof serverSchema>, ServerBase>>,
  Assert<Same<z.output<typeof pluginsSchema>, PluginsConfig>>,
  Assert<Same<z.output<typeof tenantSchema>, TenantConfig>>,
];
