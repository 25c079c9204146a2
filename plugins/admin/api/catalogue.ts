import { jsonSchemaOf, type KernelApi } from '../../../sdk/plugin/index.ts';

export { jsonSchemaOf };

export type Json = Record<string, unknown>;

/**
 * Keys that hold secrets although their schema does not say `writeOnly` (third-party plugins):
 * their values are never shown either.
 */
const SECRET_KEY = /^(password|passphrase|secret|client_secret|key|api_key|apikey|token|access_token|refresh_token|private_key)$|_(password|secret|token)$/;

/** Control ops carry secrets as values and hashes too (`secrets.set` value/configValue, `secdef.*` hash/configHash). */
const SECRET_ARG = /^(value|hash)$|(Value|Hash|_value|_hash)$/;

/** A named-entry list section of the config: one resource type of the admin API. */
export interface ResourceSection {
  name: string;
  /** A label for people (`REST channels`), from the section schema's `title` (its `.meta({ title })`); the name when it has none. */
  title: string;
  description: string;
  /** JSON Schema (2020-12) of one entry, from the section's zod schema (`.describe()` texts included). */
  schema: Json;
  /** Keys whose values are never shown (secrets): the schema's `writeOnly` ones and secret-looking names. */
  writeOnly: string[];
}


/**
 * The resource sections, discovered from the composed config schema: every top-level section
 * that is a list of objects keyed by `name` (channels, security definitions, groups, outgoing
 * connections, named secrets, pub/sub topics and endpoints, and any plugin's).
 */
export function resourceSections(kernel: KernelApi): ResourceSection[] {
  const out: ResourceSection[] = [];
  for (const [name, schema] of Object.entries(kernel.configSections())) {
    const json = jsonSchemaOf(schema);
    if (json.type !== 'array' || typeof json.items !== 'object' || json.items === null) continue;
    const items = json.items as Json;
    const variants = ((items.oneOf ?? items.anyOf) as Json[] | undefined) ?? [items];
    if (!variants.every((v) => typeof v.properties === 'object' && v.properties !== null && 'name' in (v.properties as Json))) continue;
    const writeOnly = new Set<string>();
    for (const v of variants) {
      for (const [key, prop] of Object.entries(v.properties as Record<string, Json>)) if (prop.writeOnly === true || SECRET_KEY.test(key)) writeOnly.add(key);
    }
    if (json.$defs) items.$defs = json.$defs;
    out.push({ name, title: typeof json.title === 'string' ? json.title : name, description: typeof json.description === 'string' ? json.description : name, schema: items, writeOnly: [...writeOnly].sort() });
  }
  return out;
}

/** A value in an audit row: secret-looking keys redacted, and a long one cut to its size. */
const AUDIT_VALUE_MAX = 1_000;
export function auditValue(value: unknown): unknown {
  const redacted = redactSecrets(value);
  const text = JSON.stringify(redacted);
  return text !== undefined && text.length > AUDIT_VALUE_MAX ? `[${text.length} characters]` : redacted;
}

/** Args of control ops and audit details: values under secret-looking keys are replaced. */
export function redactSecrets(value: unknown, extraKeys: readonly string[] = []): unknown {
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, extraKeys));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) || extraKeys.includes(k) || SECRET_ARG.test(k) ? '[redacted]' : redactSecrets(v, extraKeys);
  return out;
}
