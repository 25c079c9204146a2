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
  scopedRef: { keep: readonly string[] };
}

/**
 * Marks a config field (a string, or each string of an array) as a reference to a named
 * resource: in a tenant's config it is qualified with the tenant, and an entry of one tenant may
 * not name another's. `keep`: values that mean no resource and stay as written (`none`).
 */
export function scopedRef<T extends z.ZodType>(schema: T, opts: { keep?: readonly string[] } = {}): T {
  return schema.meta({ scopedRef: { keep: opts.keep ?? [] } }) as T;
}

/** The reference metadata of a schema (through its parents: `.describe()` after `scopedRef` keeps it). */
export function scopedRefOf(schema: z.ZodType): ScopedRefMeta['scopedRef'] | undefined {
  const meta = z.globalRegistry.get(schema) as Partial<ScopedRefMeta> | undefined;
  return meta?.scopedRef;
}

/** A reference found in an entry: where, what it says, and how it is qualified. */
export interface FoundRef {
  path: (string | number)[];
  value: string;
}

/**
 * Every reference field of a config entry, walking its schema and its data side by side
 * (objects, arrays, optional and default wrappers, unions by trying each object option that
 * accepts the data). `rewrite`, when given, replaces each reference's value in a copy.
 */
export function walkRefs(schema: z.ZodType, value: unknown, rewrite?: (ref: FoundRef) => string): { refs: FoundRef[]; value: unknown } {
  const refs: FoundRef[] = [];
  const out = walk(schema, value, [], refs, rewrite);
  return { refs, value: out };
}

function walk(schema: z.ZodType, value: unknown, path: (string | number)[], refs: FoundRef[], rewrite: ((ref: FoundRef) => string) | undefined): unknown {
  const ref = scopedRefOf(schema);
  if (ref) {
    const mark = (v: unknown, p: (string | number)[]): unknown => {
      if (typeof v !== 'string' || ref.keep.includes(v)) return v;
      const found = { path: p, value: v };
      refs.push(found);
      return rewrite ? rewrite(found) : v;
    };
    if (Array.isArray(value)) return value.map((v, i) => mark(v, [...path, i]));
    return mark(value, path);
  }
  const def = schema._zod.def as unknown as Record<string, unknown> & { type: string };
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return walk(def.innerType as z.ZodType, value, path, refs, rewrite);
    case 'pipe':
      return walk(def.in as z.ZodType, value, path, refs, rewrite);
    case 'lazy':
      return walk((def.getter as () => z.ZodType)(), value, path, refs, rewrite);
    case 'array': {
      if (!Array.isArray(value)) return value;
      return value.map((v, i) => walk(def.element as z.ZodType, v, [...path, i], refs, rewrite));
    }
    case 'record': {
      if (!isPlainObject(value)) return value;
      const copy: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) copy[k] = walk(def.valueType as z.ZodType, v, [...path, k], refs, rewrite);
      return copy;
    }
    case 'object': {
      if (!isPlainObject(value)) return value;
      const shape = def.shape as Record<string, z.ZodType>;
      const copy: Record<string, unknown> = { ...value };
      for (const [k, v] of Object.entries(value)) {
        const field = shape[k];
        if (field) copy[k] = walk(field, v, [...path, k], refs, rewrite);
      }
      return copy;
    }
    case 'union': {
      // The option the data fits; for a union by a discriminator (security types), the one its key names.
      for (const option of def.options as z.ZodType[]) {
        if (option.safeParse(value).success) return walk(option, value, path, refs, rewrite);
      }
      const disc = def.discriminator as string | undefined;
      if (disc && isPlainObject(value)) {
        for (const option of def.options as z.ZodType[]) {
          const shape = (option as { _zod: { def: { shape?: Record<string, z.ZodType> } } })._zod.def.shape;
          const lit = shape?.[disc];
          if (lit && lit.safeParse(value[disc]).success) return walk(option, value, path, refs, rewrite);
        }
      }
      return value;
    }
    default:
      return value;
  }
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

/** The problems of a qualified entry: references that leave its tenant (an entry of the platform may name anything). */
export function crossTenantRefs(schema: z.ZodType, entry: unknown, tenant: string): FoundRef[] {
  return walkRefs(schema, entry).refs.filter((ref) => tenantOf(ref.value) !== tenant);
}
