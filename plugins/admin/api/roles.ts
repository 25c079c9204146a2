import { z } from 'zod';
import { SvcError } from '../../../sdk/plugin/index.ts';
import { TENANT_NAME, tenantOf } from '../../../sdk/plugin/tenants.ts';

/**
 * Roles of the admin API (docs/decisions/admin.md). `platform` administers everything; the
 * tenant roles reach one tenant's resources only: `viewer` reads, `developer` also changes
 * resources and runs the tenant's ops, `owner` also manages the tenant's accounts and keys.
 */
export const ROLES = ['platform', 'owner', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
export const TENANT_ROLES = ['owner', 'developer', 'viewer'] as const;

/** Who makes a request, with the reach of their role. */
export interface Principal {
  /** As audit rows name it: the account (`admin`, `acme/dev`), `key:NAME` or `cli`. */
  who: string;
  role: Role;
  /** The tenant of a tenant role; undefined for platform administrators. */
  tenant: string | undefined;
}

/** The control socket's caller: the server's OS user, a platform administrator. */
export const CLI_PRINCIPAL: Principal = { who: 'cli', role: 'platform', tenant: undefined };

/** The first platform administrator, created at the listener's first start. */
export const ADMIN_USER = 'admin';

/** The local part of an account or key name (a tenant's are stored as `<tenant>/<local>`). */
export const LOCAL_ACCOUNT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const LOCAL_ACCOUNT_HELP = 'letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 64 characters';
export const localAccountSchema = z.string().regex(LOCAL_ACCOUNT, LOCAL_ACCOUNT_HELP);

/** A stored account or key name: `admin`, or `acme/dev` for a tenant's. */
export const accountNameSchema = z.string().refine((name) => {
  const tenant = tenantOf(name);
  return LOCAL_ACCOUNT.test(tenant === undefined ? name : name.slice(tenant.length + 1));
}, `${LOCAL_ACCOUNT_HELP}; a tenant's as <tenant>/<name>`);

export const tenantNameSchema = z.string().regex(TENANT_NAME, 'a tenant name: lowercase letters, digits, _ and -, starting with a letter');

/** A role with its tenant: platform has none, every other role needs one. */
export function roleIssue(role: Role, tenant: string | undefined): string | undefined {
  if (role === 'platform') return tenant === undefined ? undefined : 'a platform administrator belongs to no tenant (leave tenant out)';
  return tenant === undefined ? `role '${role}' needs a tenant` : undefined;
}

/** What is wrong with an account or key's grant: its role and tenant, the tenant declared, its name in that tenant. */
export function grantIssue(g: { name: string; role: Role; tenant: string | undefined }, declared: (tenant: string) => boolean): string | undefined {
  const issue = roleIssue(g.role, g.tenant);
  if (issue !== undefined) return issue;
  if (g.tenant !== undefined && !declared(g.tenant)) return `no tenant '${g.tenant}' in the config (tenants)`;
  if (tenantOf(g.name) !== g.tenant) return g.tenant === undefined ? `'${g.name}' is a tenant's name; a platform account has a plain one` : `a name of tenant '${g.tenant}' is '${g.tenant}/<name>'`;
  return undefined;
}

/** `local` as the account of `tenant`: `acme/dev`, or `ops` for the platform. */
export function accountName(tenant: string | undefined, local: string): string {
  return tenant === undefined ? local : `${tenant}/${local}`;
}

export const canChange = (p: Principal) => p.role !== 'viewer';
export const canManageAccounts = (p: Principal) => p.role === 'platform' || p.role === 'owner';

/** Whether the principal reaches a thing of this name: platform everything, a tenant role its tenant's. */
export function reaches(p: Principal, name: string): boolean {
  return p.tenant === undefined || tenantOf(name) === p.tenant;
}

export function refuseRole(p: Principal, what: string): never {
  throw new SvcError('FORBIDDEN', `Your role (${p.role}) may not ${what}`);
}
