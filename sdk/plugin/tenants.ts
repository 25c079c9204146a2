import { z } from 'zod';

/**
 * Tenants (docs/tenants.md). Every named resource belongs to the platform or to one tenant; a
 * tenant's resources carry qualified names, `<tenant>/<name>` (`acme/orders`), everywhere the
 * server shows or stores them. A tenant writes short names in its own config and code; the
 * kernel qualifies them, so two tenants may each have a service `orders`, and a tenant's code
 * can only ever name its own resources.
 */

export const TENANT_SEPARATOR = '/';

/** Tenant names: short, lowercase, safe in URLs, file names and metric labels. */
export const TENANT_NAME = /^[a-z][a-z0-9_-]{0,31}$/;

/** The tenant a qualified name belongs to, or undefined for the platform's. */
export function tenantOf(name: string): string | undefined {
  const at = name.indexOf(TENANT_SEPARATOR);
  if (at <= 0) return undefined;
  const tenant = name.slice(0, at);
  return TENANT_NAME.test(tenant) ? tenant : undefined;
}

/** A name without its tenant part (`acme/orders` → `orders`); a platform name as it is. */
export function localName(name: string): string {
  return tenantOf(name) === undefined ? name : name.slice(name.indexOf(TENANT_SEPARATOR) + 1);
}

/**
 * A name (or pub/sub topic) as a tenant's code or config wrote it, in that tenant's namespace.
 * A topic's leading slash goes: `/orders/new` of acme is `acme/orders/new`.
 */
export function qualify(tenant: string | undefined, name: string): string {
  return tenant === undefined ? name : `${tenant}${TENANT_SEPARATOR}${name.replace(/^\/+/, '')}`;
}

/** The same name qualified for the tenant of the calling service (host calls: `sql('crm')` from `acme/orders` → `acme/crm`). */
export function scopedFor(service: string, name: string): string {
  return qualify(tenantOf(service), name);
}

/** Metadata a config field carries when it names another resource (a service, a connection, a security definition). */
export interface ScopedRefMeta {
  /** `to`: what it names, for the Dashboard's choices (SDK 1.12): config sections by name, or `services` for the deployed services. */
  scopedRef: { keep: readonly string[]; to?: readonly string[] };
}

/** Metadata of a field that names a file or folder of the server's machine: a tenant's entries may not set it. */
export interface HostPathMeta {
  hostPath: true;
}

/**
 * Marks a config field (a string, or each string of an array) as a reference to a named
 * resource: in a tenant's config it is qualified with the tenant, and an entry of one tenant may
 * not name another's. `keep`: values that mean no resource and stay as written (`none`). `to`:
 * the config sections whose entries it names, or `services` (the Dashboard offers those names and
 * warns of one that does not exist).
 */
export function scopedRef<T extends z.ZodType>(schema: T, opts: { keep?: readonly string[]; to?: readonly string[] } = {}): T {
  return schema.meta({ scopedRef: { keep: opts.keep ?? [], ...(opts.to && { to: opts.to }) } }) as T;
}

/**
 * Marks a config field that names a path on the server's machine (a CA file, a key file, a folder
 * to poll): the platform's entries may set it, a tenant's may not (docs/tenants.md: a tenant
 * reaches no file of the server).
 */
export function hostPath<T extends z.ZodType>(schema: T): T {
  return schema.meta({ hostPath: true }) as T;
}

type Marks = Partial<ScopedRefMeta & HostPathMeta>;

function marksOf(schema: z.ZodType): Marks | undefined {
  return z.globalRegistry.get(schema) as Marks | undefined;
}

/** The reference metadata of a schema (through its parents: `.describe()` after `scopedRef` keeps it). */
export function scopedRefOf(schema: z.ZodType): ScopedRefMeta['scopedRef'] | undefined {
  return marksOf(schema)?.scopedRef;
}

/** A marked field found in an entry: where, and what it says. */
export interface FoundRef {
  path: (string | number)[];
  value: string;
}

/**
 * Every reference field of a config entry (and every host path it sets), walking its schema and
 * its data side by side (objects, arrays, records, optional and default wrappers, unions by the
 * option that accepts the data). `rewrite`, when given, replaces each reference's value in a copy.
 */
export function walkRefs(schema: z.ZodType, value: unknown, rewrite?: (ref: FoundRef) => string): { refs: FoundRef[]; hostPaths: FoundRef[]; value: unknown } {
  const found = { refs: [] as FoundRef[], hostPaths: [] as FoundRef[] };
  const out = walk(schema, value, [], found, rewrite);
  return { ...found, value: out };
}

interface Found {
  refs: FoundRef[];
  hostPaths: FoundRef[];
}

function walk(schema: z.ZodType, value: unknown, path: (string | number)[], found: Found, rewrite: ((ref: FoundRef) => string) | undefined): unknown {
  const marks = marksOf(schema);
  if (marks?.hostPath && value !== undefined) found.hostPaths.push({ path, value: String(value) });
  const ref = marks?.scopedRef;
  if (ref) {
    const mark = (v: unknown, p: (string | number)[]): unknown => {
      if (typeof v !== 'string' || ref.keep.includes(v)) return v;
      const at = { path: p, value: v };
      found.refs.push(at);
      return rewrite ? rewrite(at) : v;
    };
    if (Array.isArray(value)) return value.map((v, i) => mark(v, [...path, i]));
    return mark(value, path);
  }
  const def = schema._zod.def as unknown as Record<string, unknown> & { type: string };
  const next = (s: unknown, v: unknown, p: (string | number)[]) => walk(s as z.ZodType, v, p, found, rewrite);
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return next(def.innerType, value, path);
    case 'pipe':
      return next(def.in, value, path);
    case 'lazy':
      return next((def.getter as () => z.ZodType)(), value, path);
    case 'array':
      return Array.isArray(value) ? value.map((v, i) => next(def.element, v, [...path, i])) : value;
    case 'record': {
      if (!isPlainObject(value)) return value;
      const copy: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) copy[k] = next(def.valueType, v, [...path, k]);
      return copy;
    }
    case 'object': {
      if (!isPlainObject(value)) return value;
      const shape = def.shape as Record<string, z.ZodType>;
      const copy: Record<string, unknown> = { ...value };
      for (const [k, v] of Object.entries(value)) {
        const field = shape[k];
        if (field) copy[k] = next(field, v, [...path, k]);
      }
      return copy;
    }
    case 'union': {
      // The option the data fits; else, for a union by a discriminator (security types), the one its key names.
      const options = def.options as z.ZodType[];
      const fits = options.find((o) => o.safeParse(value).success) ?? discriminated(options, def.discriminator as string | undefined, value);
      return fits ? next(fits, value, path) : value;
    }
    default:
      return value;
  }
}

function discriminated(options: z.ZodType[], key: string | undefined, value: unknown): z.ZodType | undefined {
  if (!key || !isPlainObject(value)) return undefined;
  return options.find((o) => {
    const shape = (o._zod.def as unknown as { shape?: Record<string, z.ZodType> }).shape;
    return shape?.[key]?.safeParse(value[key]).success;
  });
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A tenant's config entry in its namespace: its `name` and every reference qualified with the
 * tenant; a REST channel's `url_path` (`urlPrefix` given) under the tenant's URL prefix.
 */
export function qualifyEntry(schema: z.ZodType, entry: unknown, tenant: string, urlPrefix?: string): unknown {
  const { value } = walkRefs(schema, entry, (ref) => qualify(tenant, ref.value));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = { ...value };
  if (typeof out.name === 'string') out.name = qualify(tenant, out.name);
  if (urlPrefix !== undefined && typeof out.url_path === 'string') out.url_path = joinUrl(urlPrefix, out.url_path);
  return out;
}

/** `/t/acme` + `/orders` → `/t/acme/orders`; `/t/acme` + `/` → `/t/acme/`. */
export function joinUrl(prefix: string, path: string): string {
  return prefix.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`);
}
