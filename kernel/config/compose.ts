import { z } from 'zod';
import type { Plugin, ConfigIssue } from '../plugin.ts';
import { ConfigError } from '../../sdk/plugin/config-source.ts';
import { channelBaseShape, KERNEL_SECTIONS, pluginsSchema, securityBaseShape, serverSchema, tenantsSchema, type SvcConfig } from './schema.ts';
import type { ValidationContext } from '../../sdk/plugin/contract.ts';
import { messageFormatNames } from '../services/messages.ts';

/** `channel_rest[2].url_path` */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : out ? `.${String(part)}` : String(part);
  return out || '(root)';
}

/**
 * Zod's issues as config messages. Keys no schema knows are reported one by one: at the top level
 * and in a channel, a key is unknown when no enabled plugin contributes it (or it is misspelt).
 */
export function zodIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  return zodIssueList(issues).map(formatIssue);
}

/** The same issues with their paths as data (the admin API reports them per field). */
export function zodIssueList(issues: readonly z.core.$ZodIssue[]): ConfigIssue[] {
  return issues.flatMap((issue) => {
    const path = issue.path as (string | number)[];
    if (issue.code !== 'unrecognized_keys') return [{ path, message: issue.message }];
    const pluginShaped = path.length === 0 || (path.length === 2 && path[0] === 'channel_rest');
    return issue.keys.map((key) => ({ path: [...path, key], message: pluginShaped ? `no enabled plugin handles '${key}' (misspelt, or its plugin is not enabled)` : 'unknown key' }));
  });
}

export function formatIssue(issue: { path: readonly PropertyKey[]; message: string }): string {
  // An issue without a path names its place in its message (a tenant's unreadable config file, SVC_PORT).
  return issue.path.length ? `${formatPath(issue.path)}: ${issue.message}` : issue.message;
}

interface ComposedParts {
  server: z.ZodObject;
  channel: z.ZodType;
  securityTypes: Map<string, z.ZodObject>;
  securityEntry: z.ZodType;
  sections: Record<string, z.ZodType>;
}

/** The whole file's schema for a set of plugins: the kernel's part plus what each plugin contributes. */
export function composeSchema(plugins: readonly Plugin[]): z.ZodType<SvcConfig> {
  const parts = composeParts(plugins);
  return z
    .object({
      server: parts.server.prefault({}),
      plugins: pluginsSchema,
      security: z.array(parts.securityEntry).default([]),
      channel_rest: z.array(parts.channel).default([]),
      tenants: tenantsSchema,
      ...parts.sections,
    })
    .strict() as unknown as z.ZodType<SvcConfig>;
}

/**
 * The top-level sections as documentation schemas (JSON Schema via z.toJSONSchema, forms,
 * OpenAPI): the same parts as composeSchema, with `security` entries as a union by `type`.
 */
export function configSectionSchemas(plugins: readonly Plugin[]): Record<string, z.ZodType> {
  const parts = composeParts(plugins);
  const types = [...parts.securityTypes.values()];
  const security = types.length === 0 ? z.never() : types.length === 1 ? types[0]! : z.discriminatedUnion('type', types as [z.ZodObject, z.ZodObject, ...z.ZodObject[]]);
  return {
    server: parts.server,
    security: z.array(security).describe('Security definitions, by name; the keys of each depend on its type.').meta({ title: 'Security definitions' }),
    channel_rest: z.array(parts.channel).describe('REST channels: a URL path bound to a service.').meta({ title: 'REST channels' }),
    tenants: tenantsSchema,
    ...parts.sections,
  };
}

function composeParts(plugins: readonly Plugin[]): ComposedParts {
  let channelShape: z.ZodRawShape = { ...channelBaseShape };
  const serverFields: z.ZodRawShape = {};
  const securityFields: z.ZodRawShape = {};
  const securityTypes = new Map<string, z.ZodObject>();
  const sections: Record<string, z.ZodType> = {};
  const sectionOwner = new Map<string, string>(KERNEL_SECTIONS.map((name) => [name, 'the kernel']));
  const formats = new Set<string>();
  let defaultFormat: { format: string; plugin: string } | undefined;

  for (const p of plugins) {
    const c = p.contributes;
    if (!c) continue;
    Object.assign(channelShape, c.channelFields);
    Object.assign(securityFields, c.securityFields);
    Object.assign(serverFields, c.serverFields);
    for (const f of c.dataFormats ?? []) formats.add(f);
    if (c.defaultDataFormat !== undefined) {
      if (defaultFormat) throw new ConfigError([`plugins '${defaultFormat.plugin}' and '${p.name}' both make their format the default data format; disable one`]);
      defaultFormat = { format: c.defaultDataFormat, plugin: p.name };
    }
    for (const [section, schema] of Object.entries(c.sections ?? {})) {
      const owner = sectionOwner.get(section);
      if (owner) throw new ConfigError([`plugin '${p.name}' contributes the top-level section '${section}', which ${owner} already owns`]);
      sectionOwner.set(section, `plugin '${p.name}'`);
      sections[section] = schema;
    }
  }
  if (defaultFormat) channelShape = { ...channelShape, data_format: channelBaseShape.data_format.default(defaultFormat.format) };
  for (const p of plugins) {
    for (const [type, shape] of Object.entries(p.contributes?.securityTypes ?? {})) {
      securityTypes.set(type, z.object({ ...securityBaseShape, type: z.literal(type), ...shape, ...securityFields }).strict());
    }
  }

  const formatList = [...formats].sort();
  const channel = z
    .object(channelShape)
    .strict()
    .superRefine((ch, ctx) => {
      const format = (ch as { data_format?: string }).data_format;
      if (format !== undefined && !formats.has(format)) {
        ctx.addIssue({ code: 'custom', path: ['data_format'], message: `no enabled plugin handles data format '${format}' (enabled: ${formatList.join(', ') || 'none'})` });
      }
    });

  const typeList = [...securityTypes.keys()].sort().join(', ') || 'none';
  const securityEntry = z.unknown().transform((value, ctx) => {
    const base = z.object(securityBaseShape).loose().safeParse(value);
    if (!base.success) {
      for (const issue of base.error.issues) ctx.addIssue({ code: 'custom', path: issue.path as PropertyKey[] as (string | number)[], message: issue.message });
      return z.NEVER;
    }
    const schema = securityTypes.get(base.data.type);
    if (!schema) {
      ctx.addIssue({ code: 'custom', path: ['type'], message: `unknown security type '${base.data.type}' (enabled: ${typeList})` });
      return z.NEVER;
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', path: issue.path as (string | number)[], message: issue.message });
      return z.NEVER;
    }
    return parsed.data as SvcConfig['security'][number];
  });

  return { server: serverSchema.extend(serverFields), channel, securityTypes, securityEntry, sections };
}

/** Checks that need the whole config: unique names, references between entries, plugin checks. */
export function crossCheck(config: SvcConfig, plugins: readonly Plugin[]): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const targets = new Set<string>(config.security.map((s) => s.name));
  for (const p of plugins) for (const name of p.contributes?.securityTargets?.(config) ?? []) targets.add(name);

  const seenSecurity = new Map<string, number>();
  config.security.forEach((s, i) => {
    if (seenSecurity.has(s.name)) issues.push({ path: ['security', i, 'name'], message: `duplicate name '${s.name}' (also security[${seenSecurity.get(s.name)}])` });
    else seenSecurity.set(s.name, i);
  });

  const seenChannels = new Map<string, number>();
  config.channel_rest.forEach((ch, i) => {
    if (seenChannels.has(ch.name)) issues.push({ path: ['channel_rest', i, 'name'], message: `duplicate channel name '${ch.name}' (also channel_rest[${seenChannels.get(ch.name)}])` });
    else seenChannels.set(ch.name, i);
    if (ch.security !== 'none' && !targets.has(ch.security)) {
      issues.push({ path: ['channel_rest', i, 'security'], message: `no security definition or group named '${ch.security}' (use 'none' for no server-side authentication)` });
    }
  });

  const context: ValidationContext = { messageFormats: messageFormatNames(plugins.map((p) => p.contributes)) };
  for (const p of plugins) {
    for (const issue of p.contributes?.validateConfig?.(config, context) ?? []) issues.push(issue);
  }
  return issues;
}
