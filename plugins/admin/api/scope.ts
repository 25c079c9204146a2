import { z } from 'zod';
import { SvcError, type KernelApi } from '../../../sdk/plugin/index.ts';
import { localName, qualify, qualifyEntry, tenantOf, walkRefs } from '../../../sdk/plugin/tenants.ts';
import type { Entry } from './layer.ts';
import type { Principal } from './roles.ts';

/** Sections only platform administrators see: the tenants themselves. */
export const PLATFORM_SECTIONS: ReadonlySet<string> = new Set(['tenants']);

/**
 * A tenant's view of the config (docs/decisions/admin.md, "Tenants in the admin API"). The API
 * shows every name as the server stores it, qualified (`acme/orders`), the same as in traffic,
 * logs, metrics and the audit log. A tenant's administrator may write a name short (`orders`)
 * or qualified with its own tenant; a name qualified with another declared tenant is that
 * tenant's, and answers 404 whatever the request.
 */
export class TenantScope {
  constructor(private readonly kernel: KernelApi) {}

  private tenants() {
    return this.kernel.config().tenants ?? [];
  }

  /** Whether the config declares the tenant. */
  declared(tenant: string): boolean {
    return this.tenants().some((t) => t.name === tenant);
  }

  /** Where the tenant's REST channels live: its `url_prefix`, by default `/t/<tenant>`. */
  urlPrefix(tenant: string): string {
    return this.tenants().find((t) => t.name === tenant)?.url_prefix ?? `/t/${tenant}`;
  }

  /**
   * The stored name a request means: as given for a platform administrator; for a tenant's, the
   * name in its tenant. `notFound` is the 404's message for a name of another tenant: the same
   * one a missing resource gets, so the answer tells nothing about the other tenant.
   */
  resolve(p: Principal, name: string, notFound: (name: string) => string): string {
    if (p.tenant === undefined) return name;
    const owner = tenantOf(name);
    if (owner === p.tenant) return name;
    if (owner !== undefined && this.declared(owner)) throw new SvcError('NOT_FOUND', notFound(name));
    return qualify(p.tenant, name);
  }

  /**
   * An entry a tenant's administrator sent, in its tenant: its name, every reference and a REST
   * channel's url_path qualified (`qualifyEntry`), whether it wrote them short or already
   * qualified (so what a GET showed can be sent back as it is).
   */
  entry(p: Principal, entrySchema: z.ZodType | undefined, entry: Entry, notFound: (name: string) => string): Entry {
    const tenant = p.tenant;
    if (tenant === undefined) return entry;
    // A section whose entries cannot be walked still gets its name qualified.
    const schema = entrySchema ?? z.unknown();
    if (typeof entry.name === 'string') entry = { ...entry, name: localName(this.resolve(p, entry.name, notFound)) };
    const { value } = walkRefs(schema, entry, (ref) => (tenantOf(ref.value) === tenant ? localName(ref.value) : ref.value));
    const local = { ...(value as Entry) };
    const prefix = this.urlPrefix(tenant);
    if (typeof local.url_path === 'string' && (local.url_path === prefix || local.url_path.startsWith(`${prefix}/`))) local.url_path = local.url_path.slice(prefix.length) || '/';
    return qualifyEntry(schema, local, tenant, prefix) as Entry;
  }
}

/** The schema of one entry of a list section (through defaults and other wrappers). */
export function entrySchemaOf(section: z.ZodType): z.ZodType | undefined {
  let schema = section;
  for (let i = 0; i < 10; i++) {
    const def = schema._zod.def as unknown as { type: string; innerType?: z.ZodType; in?: z.ZodType; element?: z.ZodType };
    if (def.type === 'array') return def.element;
    const next = def.innerType ?? def.in;
    if (!next) return undefined;
    schema = next;
  }
  return undefined;
}
