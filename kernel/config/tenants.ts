import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { z } from 'zod';
import type { ConfigIssue, RawConfig } from '../plugin.ts';
import { ConfigError, readSource } from '../../sdk/plugin/config-source.ts';
import { joinUrl, qualifyEntry, tenantOf, TENANT_NAME, TENANT_SEPARATOR, walkRefs } from '../../sdk/plugin/tenants.ts';
import type { SvcConfig, TenantConfig } from './schema.ts';

/**
 * Tenants' own config (docs/tenants.md): each tenant's sections, from `tenants[].config` in the
 * main file or from its `config_file`, written with short names, join the main sections with
 * every name and reference qualified (`orders` → `acme/orders`) and every REST channel under the
 * tenant's URL prefix. Whatever a tenant writes, its entries can then only name its own resources.
 */

/** Sections a tenant may not have: the server's, the plugin set, the tenants themselves. */
const PLATFORM_ONLY = new Set(['server', 'plugins', 'tenants']);

/** `/t/acme` unless the tenant names its own prefix. */
export function urlPrefixOf(tenant: Pick<TenantConfig, 'name' | 'url_prefix'>): string {
  return tenant.url_prefix ?? `/t/${tenant.name}`;
}

/** Where an entry added from a tenant's config came from, for config messages: `section:index` → its place there. */
export type TenantOrigins = Map<string, { source: string; section: string; index: number }>;

/** How config messages name a tenant's config file: `tenants[acme].config_file (tenants/acme.yaml)`. */
export function tenantFileLabel(tenant: string, configFile: string): string {
  return `tenants[${tenant}].config_file (${configFile})`;
}

/** The array schema of a section, through its default/optional wrappers, or undefined. */
function entrySchemaOf(section: z.ZodType | undefined): z.ZodType | undefined {
  let s = section as { _zod: { def: { type: string; innerType?: z.ZodType; element?: z.ZodType } } } | undefined;
  while (s && s._zod.def.innerType) s = s._zod.def.innerType as unknown as typeof s;
  return s?._zod.def.type === 'array' ? s._zod.def.element : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A tenant's config file: YAML of sections, read as it is (no `${VARIABLE}`: the server's environment is not the tenant's). */
function readTenantFile(file: string, label: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([`${label}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`]);
  }
  if (/\$\{[A-Za-z_][A-Za-z0-9_]*\}/.test(text)) {
    throw new ConfigError([`${label}: a tenant's config file takes no \${VARIABLE} (the server's environment is the platform's); keep credentials in named secrets (docs/tenants.md)`]);
  }
  const data = readSource(text, {});
  if (data === null || data === undefined) return {};
  if (!isObject(data)) throw new ConfigError([`${label}: must be a mapping of sections (channel_rest: [...], outgoing_rest: [...])`]);
  return data;
}

/**
 * The raw config with every tenant's sections added to the main ones, qualified. Malformed
 * `tenants` data is left to the schema to report. `sections`: the composed section schemas.
 */
export function expandTenants(raw: RawConfig, sections: Record<string, z.ZodType>, baseDir: string): { raw: RawConfig; origins: TenantOrigins } {
  const origins: TenantOrigins = new Map();
  const tenants = raw.tenants;
  if (!Array.isArray(tenants) || tenants.length === 0) return { raw, origins };
  const out: RawConfig = { ...raw };
  const issues: string[] = [];
  for (const t of tenants) {
    if (!isObject(t) || typeof t.name !== 'string' || !TENANT_NAME.test(t.name)) continue;
    const name = t.name;
    const prefix = typeof t.url_prefix === 'string' ? t.url_prefix : `/t/${name}`;
    const sources: Array<{ label: string; data: Record<string, unknown> }> = [];
    if (isObject(t.config)) sources.push({ label: `tenants[${name}].config`, data: t.config });
    if (typeof t.config_file === 'string') {
      const file = isAbsolute(t.config_file) ? t.config_file : resolve(baseDir, t.config_file);
      const label = tenantFileLabel(name, t.config_file);
      try {
        sources.push({ label, data: readTenantFile(file, label) });
      } catch (err) {
        issues.push(...(err instanceof ConfigError ? err.issues : [`${label}: ${(err as Error).message}`]));
      }
    }
    for (const { label, data } of sources) {
      for (const [section, entries] of Object.entries(data)) {
        if (PLATFORM_ONLY.has(section)) {
          issues.push(`${label}.${section}: a tenant has no '${section}' section (it is the platform's)`);
          continue;
        }
        const entrySchema = entrySchemaOf(sections[section]);
        if (!entrySchema) {
          issues.push(`${label}.${section}: no enabled plugin has a section '${section}' of named entries`);
          continue;
        }
        if (!Array.isArray(entries)) {
          issues.push(`${label}.${section}: must be a list of entries`);
          continue;
        }
        const list = Array.isArray(out[section]) ? [...(out[section] as unknown[])] : [];
        entries.forEach((entry, i) => {
          origins.set(`${section}:${list.length}`, { source: label, section, index: i });
          list.push(qualifyEntry(entrySchema, entry, name, section === 'channel_rest' ? prefix : undefined));
        });
        out[section] = list;
      }
    }
  }
  if (issues.length) throw new ConfigError(issues);
  return { raw: out, origins };
}

/** An entry a tenant's own config added (qualified, as written there), and where it is written. */
export interface TenantEntry {
  section: string;
  entry: Record<string, unknown>;
  /** `tenants[acme].config_file (tenants/acme.yaml).channel_rest[0]` */
  origin: string;
}

/** The entries expandTenants added, in their sections' order. */
export function tenantEntriesOf(expanded: { raw: RawConfig; origins: TenantOrigins }): TenantEntry[] {
  const out: TenantEntry[] = [];
  for (const [key, origin] of expanded.origins) {
    const entry = (expanded.raw[origin.section] as unknown[] | undefined)?.[Number(key.slice(key.lastIndexOf(':') + 1))];
    if (isObject(entry)) out.push({ section: origin.section, entry, origin: `${origin.source}.${origin.section}[${origin.index}]` });
  }
  return out;
}

/**
 * An issue at `channel_rest[7].service` of an entry a tenant's config added, as the tenant wrote
 * it: the path starts with the tenant's source (`tenants[acme].config_file (tenants/acme.yaml)`),
 * then its place in that source (`channel_rest[0].service`). Undefined for the main file's entries.
 */
export function relabel(issue: ConfigIssue, origins: TenantOrigins): ConfigIssue | undefined {
  const [section, index, ...rest] = issue.path;
  if (typeof section !== 'string' || typeof index !== 'number') return undefined;
  const origin = origins.get(`${section}:${index}`);
  if (!origin) return undefined;
  return { path: [origin.source, origin.section, origin.index, ...rest], message: issue.message };
}

/** Path segments of a URL prefix, to compare prefixes by whole segments (`/t/a` is not under `/t/ab`). */
function segments(path: string): string[] {
  return path.split('/').filter(Boolean);
}

function under(path: string, prefix: string): boolean {
  const p = segments(path);
  const q = segments(prefix);
  return q.length <= p.length && q.every((s, i) => p[i] === s);
}

/**
 * What the schema cannot see: an entry of a declared tenant (`acme/…`; one without a name is the
 * tenant's whose resource it names) naming another tenant's or the platform's resource; a tenant
 * channel outside its URL prefix, or anyone else's inside it; tenants' URL prefixes that overlap.
 * The platform's own entries may name anything.
 */
export function tenantIssues(config: SvcConfig, sections: Record<string, z.ZodType>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const declared = new Map(config.tenants.map((t) => [t.name, t]));
  config.tenants.forEach((t, i) => {
    config.tenants.forEach((o, j) => {
      if (j <= i) return;
      const a = urlPrefixOf(t);
      const b = urlPrefixOf(o);
      if (under(a, b) || under(b, a)) issues.push({ path: ['tenants', j, 'url_prefix'], message: `'${b}' overlaps tenant '${t.name}''s URL prefix '${a}': one tenant could shadow the other's routes` });
    });
  });
  if (declared.size === 0) return issues;
  const ownerOf = (name: unknown): TenantConfig | undefined => {
    if (typeof name !== 'string') return undefined;
    const at = name.indexOf(TENANT_SEPARATOR);
    return at > 0 ? declared.get(name.slice(0, at)) : undefined;
  };
  const data = config as unknown as Record<string, unknown>;
  for (const [section, schema] of Object.entries(sections)) {
    const entrySchema = entrySchemaOf(schema);
    const entries = data[section];
    if (!entrySchema || !Array.isArray(entries)) continue;
    entries.forEach((entry: unknown, i) => {
      if (!isObject(entry)) return;
      const named = typeof entry.name === 'string';
      const found = named ? undefined : walkRefs(entrySchema, entry);
      // An entry without a name (a pub/sub subscription) is the tenant's whose resources it names.
      const tenant = named ? ownerOf(entry.name) : found?.refs.map((r) => ownerOf(r.value)).find((t) => t !== undefined);
      if (section === 'channel_rest' && typeof entry.url_path === 'string') {
        if (tenant && !under(entry.url_path, urlPrefixOf(tenant))) {
          issues.push({ path: [section, i, 'url_path'], message: `a channel of tenant '${tenant.name}' must be under its URL prefix ${urlPrefixOf(tenant)} (e.g. ${joinUrl(urlPrefixOf(tenant), '/orders')})` });
        }
        for (const other of declared.values()) {
          if (other !== tenant && under(entry.url_path, urlPrefixOf(other))) issues.push({ path: [section, i, 'url_path'], message: `${urlPrefixOf(other)} is tenant '${other.name}''s URL space; no other channel may be under it` });
        }
      }
      if (!tenant) return;
      const { refs, hostPaths } = found ?? walkRefs(entrySchema, entry);
      const rule = named ? 'an entry of a tenant names only its own resources' : `an entry naming tenant '${tenant.name}''s resources names no other's`;
      for (const ref of refs) {
        if (tenantOf(ref.value) !== tenant.name) issues.push({ path: [section, i, ...ref.path], message: `'${ref.value}' is not tenant '${tenant.name}''s: ${rule}` });
      }
      for (const at of hostPaths) {
        issues.push({ path: [section, i, ...at.path], message: `a tenant's entry names no file or folder of the server (tenant '${tenant.name}'); the platform may set it, or use the secret/SFTP form` });
      }
    });
  }
  return issues;
}
