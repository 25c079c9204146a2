import { z } from 'zod';
import type { ConfigIssue, SvcConfig } from '../../../sdk/plugin/index.ts';
import { channelsNamingType } from '../shared/outgoing-only.ts';

export const BEARER_TOKEN = 'bearer_token';

/** RFC 6749 §3.3 scope-token: printable ASCII except space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

export function scopeProblem(scope: string): string | undefined {
  return SCOPE_TOKEN.test(scope) ? undefined : `scope '${scope}' is not an OAuth scope (printable ASCII without spaces, '"' or '\\'; one scope per line)`;
}

/** Scopes as the spec writes them (one per line) or as a YAML list; blank lines and repeats dropped. */
const scopesSchema = z.union([z.string(), z.array(z.string())]).transform((value, ctx) => {
  const scopes: string[] = [];
  for (const line of typeof value === 'string' ? value.split(/\r?\n/) : value) {
    const scope = line.trim();
    if (scope === '') continue;
    const problem = scopeProblem(scope);
    if (problem !== undefined) {
      ctx.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    }
    if (!scopes.includes(scope)) scopes.push(scope);
  }
  return scopes;
});

/** `key=value` lines (the spec's wording) or a YAML map; values are sent as strings. */
const extraFieldsSchema = z
  .union([z.string(), z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))])
  .transform((value, ctx) => {
    const pairs: [string, string][] = typeof value === 'string' ? [] : Object.entries(value).map(([k, v]) => [k, String(v)]);
    if (typeof value === 'string') {
      for (const line of value.split(/\r?\n/)) {
        if (line.trim() === '') continue;
        const eq = line.indexOf('=');
        if (eq <= 0 || line.slice(0, eq).trim() === '') {
          ctx.addIssue({ code: 'custom', message: `'${line.trim()}' is not a key=value pair` });
          return z.NEVER;
        }
        pairs.push([line.slice(0, eq).trim(), line.slice(eq + 1).trim()]);
      }
    }
    const fields: Record<string, string> = {};
    for (const [key, val] of pairs) {
      if (key === '') {
        ctx.addIssue({ code: 'custom', message: 'a field name must not be empty' });
        return z.NEVER;
      }
      if (Object.hasOwn(fields, key)) {
        ctx.addIssue({ code: 'custom', message: `'${key}' is given twice` });
        return z.NEVER;
      }
      fields[key] = val;
    }
    return fields;
  });

const authServerUrlSchema = z.string().superRefine((value, ctx) => {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    ctx.addIssue({ code: 'custom', message: 'must be an http or https URL' });
  } else if (url.username !== '' || url.password !== '') {
    ctx.addIssue({ code: 'custom', message: 'must not carry credentials: put the secret in client_secret' });
  }
});

const fieldName = z.string().min(1).max(256);

/** Keys of a `security[]` entry with `type: bearer_token` (name and type come from the kernel). */
export const bearerTokenShape = {
  username: z.string().min(1).max(1024).describe('The OAuth client ID sent to the auth server.'),
  client_secret: z
    .string()
    .min(1)
    .max(4096)
    .describe('The OAuth client secret sent to the auth server. Write it as `${ENV_NAME}` to keep it out of the file; never logged.')
    .meta({ writeOnly: true }),
  auth_server_url: authServerUrlSchema.describe('Token endpoint address (http or https; https unless the auth server is on a trusted network).'),
  scopes: scopesSchema
    .default([])
    .describe('OAuth scopes requested with each token: one per line (or a YAML list). None by default. A call\'s `auth_scopes` overrides them.'),
  client_id_field: fieldName.default('client_id').describe('Field name of the client ID in the token request.'),
  client_secret_field: fieldName.default('client_secret').describe('Field name of the client secret in the token request.'),
  grant_type: z.string().min(1).default('client_credentials').describe('Value of `grant_type` in the token request.'),
  extra_fields: extraFieldsSchema
    .default({})
    .describe('Additional fields sent with every token request: `key=value` lines or a YAML map (e.g. `audience`, `resource`). None by default.'),
  data_format: z
    .enum(['form', 'json'])
    .default('form')
    .describe('Token request body: `form` (application/x-www-form-urlencoded, what most auth servers expect) or `json`.'),
  token_timeout_ms: z
    .number()
    .int()
    .min(1)
    .max(300_000)
    .default(10_000)
    .describe('Time limit of one token request, connection to last byte; past it the calls waiting for the token fail with 502. A call waits no longer than its budget and its service\'s time limit leave (then 504 for that call).'),
};

/** A definition as the capability receives it: other security fields (rate_limiting) are dropped. */
export const bearerTokenDefinitionSchema = z.object({ name: z.string().min(1), type: z.literal(BEARER_TOKEN), ...bearerTokenShape });
export type BearerTokenDefinition = z.infer<typeof bearerTokenDefinitionSchema>;

export function bearerTokenEntries(config: SvcConfig): BearerTokenDefinition[] {
  return config.security.filter((s) => s.type === BEARER_TOKEN) as BearerTokenDefinition[];
}

/** Names a token request uses itself, which extra fields must not replace. */
const RESERVED_FIELDS = ['grant_type', 'scope'];

/**
 * Bearer tokens authenticate outgoing calls only (spec: not usable on channels); a channel naming
 * one would otherwise match no authenticate hook and be open. Group members are refused by the
 * groups plugin, which accepts basic_auth and apikey only.
 */
export function validateBearerToken(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  config.security.forEach((entry, index) => {
    if (entry.type !== BEARER_TOKEN) return;
    const def = entry as BearerTokenDefinition;
    const path = ['security', index];
    for (const field of ['client_id_field', 'client_secret_field'] as const) {
      if (RESERVED_FIELDS.includes(def[field])) issues.push({ path: [...path, field], message: `'${def[field]}' is a field the token request sets itself` });
    }
    if (def.client_id_field === def.client_secret_field) {
      issues.push({ path: [...path, 'client_secret_field'], message: `must differ from client_id_field ('${def.client_id_field}')` });
    }
    const taken = new Set([...RESERVED_FIELDS, def.client_id_field, def.client_secret_field]);
    for (const key of Object.keys(def.extra_fields)) {
      if (taken.has(key)) issues.push({ path: [...path, 'extra_fields', key], message: `'${key}' is set by the token request itself (grant_type, scopes or the client id and secret fields)` });
    }
  });
  issues.push(...channelsNamingType(config, BEARER_TOKEN, 'Bearer tokens authenticate outgoing connections only, not channels'));
  return issues;
}
