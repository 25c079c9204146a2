import { canChange, canManageAccounts, refuseRole, type Principal } from './roles.ts';

/**
 * Who may call an endpoint, before what it names is looked at:
 * - `public`: no credentials (login);
 * - `read`: every role (what a tenant's administrator gets back is its tenant's only);
 * - `change`: every role but viewer;
 * - `accounts`: platform administrators and tenant owners (a tenant's owner: its tenant's accounts and keys).
 */
export type Access = 'public' | 'read' | 'change' | 'accounts';

export interface AdminRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Under /admin/api, with `{param}`s. */
  path: string;
  access: Access;
  summary: string;
}

/**
 * Every endpoint of the admin API: the listener registers exactly these (a handler missing for
 * one, or one without a row, fails at start), and the README's table of roles has a row per
 * endpoint, which test/plugins/admin/api/roles.test.ts checks cell by cell.
 */
export const ADMIN_ROUTES: readonly AdminRoute[] = [
  { method: 'POST', path: '/login', access: 'public', summary: 'Log in: sets the session cookie, returns role, tenant and the CSRF token' },
  { method: 'POST', path: '/logout', access: 'read', summary: 'Ends the session' },
  { method: 'GET', path: '/session', access: 'read', summary: 'The current session (role, tenant) and its CSRF token' },
  { method: 'GET', path: '/resources', access: 'read', summary: 'The resource sections the caller sees, with the JSON Schema of their entries' },
  { method: 'GET', path: '/resources/{section}', access: 'read', summary: "A section's entries (a tenant's administrators: their tenant's)" },
  { method: 'POST', path: '/resources/{section}', access: 'change', summary: 'Creates an entry (applied at once)' },
  { method: 'GET', path: '/resources/{section}/{name}', access: 'read', summary: 'One entry' },
  { method: 'PUT', path: '/resources/{section}/{name}', access: 'change', summary: 'Creates or replaces an entry; write-only keys left out keep their value, null clears one' },
  { method: 'DELETE', path: '/resources/{section}/{name}', access: 'change', summary: 'Deletes an entry (one from the config file stays deleted while the override exists)' },
  { method: 'GET', path: '/overrides', access: 'read', summary: 'Admin edits in force over the config file' },
  { method: 'DELETE', path: '/overrides/{section}/{name}', access: 'change', summary: "Removes an admin edit: the config file's version (or none) applies again" },
  { method: 'GET', path: '/ops', access: 'read', summary: 'The control ops the caller may run, with the JSON Schema of their arguments' },
  { method: 'POST', path: '/ops/{op}', access: 'read', summary: 'Runs a control op (a viewer: only ops that read; a tenant: only ops limited to its tenant)' },
  { method: 'GET', path: '/audit', access: 'read', summary: "Audit rows, newest first (who, tenant, what, when; never secret values); a tenant's administrators see their tenant's" },
  { method: 'GET', path: '/usage', access: 'read', summary: 'Per tenant: calls, errors, throttled calls and CPU against its quota' },
  { method: 'GET', path: '/export', access: 'read', summary: "The running config as YAML (secrets as ${VARIABLE} references); a tenant's administrators get their tenant's entries" },
  { method: 'POST', path: '/import', access: 'change', summary: 'Creates or replaces entries of several sections, checked whole: all or nothing' },
  { method: 'GET', path: '/openapi.json', access: 'read', summary: "This API's OpenAPI document (the sections and ops the caller reaches)" },
  { method: 'GET', path: '/spec/openapi.json', access: 'read', summary: "The interface specification: the channels and plugin routes clients call (a tenant's: its channels)" },
  { method: 'GET', path: '/spec/channels.json', access: 'read', summary: 'The channels alone (with the channels-openapi plugin enabled)' },
  { method: 'GET', path: '/users', access: 'accounts', summary: 'Accounts (a tenant owner: its tenant\'s)' },
  { method: 'POST', path: '/users', access: 'accounts', summary: 'Creates an account with a role (a tenant owner: in its tenant)' },
  { method: 'DELETE', path: '/users/{name}', access: 'accounts', summary: 'Deletes an account and ends its sessions' },
  { method: 'GET', path: '/keys', access: 'accounts', summary: "API keys (a tenant owner: its tenant's)" },
  { method: 'POST', path: '/keys', access: 'accounts', summary: 'Creates an API key with a role; the key is in this answer only' },
  { method: 'DELETE', path: '/keys/{name}', access: 'accounts', summary: 'Revokes an API key at once' },
];

export const routeKey = (r: Pick<AdminRoute, 'method' | 'path'>) => `${r.method} ${r.path}`;

/** 403 when the role may not call the endpoint at all (checked after the names it gives were resolved, so another tenant's name is a 404 first). */
export function checkAccess(route: AdminRoute, p: Principal): void {
  if (route.access === 'change' && !canChange(p)) refuseRole(p, 'change anything');
  if (route.access === 'accounts' && !canManageAccounts(p)) refuseRole(p, 'manage accounts and keys');
}

/** Fastify's form of a path: `{name}` → `:name`. */
export function fastifyPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}
