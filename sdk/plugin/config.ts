import { z } from 'zod';
import type { HttpMethod } from '../http.ts';
import type { ChannelFields, ConfigSections, ServerFields } from './extensions.ts';

/**
 * The validated config as plugins read it. These are declarations: the kernel's zod schema
 * (kernel/config/schema.ts, which also describes every field for docs/configuration.md) is
 * checked at compile time to produce exactly these shapes, so the two cannot drift.
 */

export { HTTP_METHODS, type HttpMethod } from '../http.ts';

/** `server.sandbox`: the sandbox processes and the limits of service calls. */
export interface SandboxConfig {
  workers: number;
  memory_mb: number;
  max_memory_mb: number;
  timeout_ms: number;
  max_timeout_ms: number;
  max_output_bytes: number;
  spill_at: number;
  idle_ms: number;
  recycle_idle_ms: number;
  recycle_above_mb: number;
  max_calls_per_isolate: number;
  tenant_workers: number;
  tenant_demote_cores?: number;
}

/** The kernel's keys of the `server` section. */
export interface ServerBase {
  host: string;
  port: number;
  data_dir: string;
  store?: string | undefined;
  services_dir: string;
  timezone: string;
  trusted_proxies?: string[] | undefined;
  log_level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  log_time: 'epoch' | 'iso';
  body_limit: number;
  step_timeout_ms: number;
  refusal_pause_ms: number;
  request_timeout_ms: number;
  drain_timeout_ms: number;
  invoke_max_depth: number;
  sandbox: SandboxConfig;
}

/** The server section: the kernel's keys plus those plugins contribute (typed in ServerFields). */
export type ServerConfig = ServerBase & ServerFields;

/** `plugins.<name>`: true/false, or its settings. */
export type PluginEntry = boolean | { enabled: boolean; module?: string | undefined; config?: unknown };
export type PluginsConfig = Record<string, PluginEntry>;

/** Whether a bundled plugin is on in this config: bundled plugins are on unless turned off. */
export function bundledPluginOn(config: { plugins: PluginsConfig }, name: string): boolean {
  const entry = config.plugins[name];
  return entry === undefined || entry === true || (typeof entry === 'object' && entry.enabled);
}

/** The kernel's keys of a `channel_rest[]` entry. */
export interface ChannelBase {
  name: string;
  url_path: string;
  service: string;
  method?: HttpMethod | undefined;
  data_format: string;
  security: string;
  url_params_pri: 'qs_over_path' | 'path_over_qs';
  params_pri: 'url_over_msg' | 'msg_over_url';
  body_limit?: number | undefined;
}

/**
 * A channel as plugins see it: the kernel's keys plus those plugins contribute, each declared by
 * its plugin in ChannelFields (sdk/plugin/extensions.ts), so reading one needs no cast.
 */
export type Channel = ChannelBase & ChannelFields;

/** Names of security definitions and groups; `@...` is kept for targets plugins define for their own routes. */
export const securityNameSchema = z
  .string()
  .min(1)
  .refine((n) => !n.startsWith('@'), "must not start with '@' (reserved for plugin routes)");

/** A `security[]` entry: its name and type, and the keys of its type (each security plugin's schema). */
export type SecurityEntry = { name: string; type: string } & Record<string, unknown>;

/** The kernel's own sections of the validated config. */
export interface TenantQuotas {
  cpu_ms_per_minute?: number | undefined;
  concurrent_calls?: number | undefined;
  memory_mb?: number | undefined;
  outgoing_calls_per_minute?: number | undefined;
  publishes_per_second?: number | undefined;
  queued_events?: number | undefined;
  pubsub_bytes?: number | undefined;
}

/** A tenant as the config declares it (docs/tenants.md); its resources' names start with `<name>/`. */
export interface TenantConfig {
  name: string;
  services_dir?: string | undefined;
  config_file?: string | undefined;
  config?: Record<string, unknown[]> | undefined;
  url_prefix?: string | undefined;
  processes: number;
  weight: number;
  quotas: TenantQuotas;
}

export interface KernelConfig {
  server: ServerConfig;
  plugins: PluginsConfig;
  security: SecurityEntry[];
  channel_rest: Channel[];
  tenants: TenantConfig[];
}

/** The validated config as the kernel and plugins read it: the kernel's sections and the enabled plugins'. */
export type SvcConfig = KernelConfig & ConfigSections;

/** The JSON Schema keyword of a field shown as a column of its section's list (admin API catalogue, Dashboard). */
export const LIST_COLUMN_KEY = 'x-svc-list';

/**
 * Marks a config field as a column of its section's list in the Dashboard, `order` from the left
 * (plugin SDK 1.12): what an operator scans a list for (a channel's path, service and security; a
 * connection's address). `title`, when given, is the column's and the form field's label. Unmarked
 * sections show their first few scalar fields.
 */
export function listColumn<T extends z.ZodType>(schema: T, order: number, title?: string): T {
  return schema.meta({ [LIST_COLUMN_KEY]: order, ...(title !== undefined && { title }) }) as T;
}

/** The JSON Schema keyword of a field that applies only when another field of its entry has a value. */
export const APPLIES_WHEN_KEY = 'x-svc-when';

/**
 * Marks a config field as one that applies only when `field` (a sibling in the same entry) is
 * `value` (plugin SDK 1.12): a format's settings with its data_format, the queue's settings with
 * use_queue. The Dashboard's forms show it only then; the config itself is checked as before.
 */
export function appliesWhen<T extends z.ZodType>(schema: T, field: string, value: string | boolean): T {
  return schema.meta({ [APPLIES_WHEN_KEY]: { field, equals: value } }) as T;
}
