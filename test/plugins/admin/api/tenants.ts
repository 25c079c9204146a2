import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { ADMIN_PASSWORD, AdminClient, type AdminKernel } from './support.ts';

/** The tenants' services directories: out of the working directory (the default is relative to it). */
const TENANT_DIRS = mkdtempSync(join(tmpdir(), 'svc-admin-tenants-'));

/** Two tenants, each with a channel, beside a platform channel: the admin API's tenant tests. */
export const TENANTS_CONFIG = `
tenants:
  - { name: acme, services_dir: ${join(TENANT_DIRS, 'acme')}, quotas: { cpu_ms_per_minute: 6000 } }
  - { name: beta, services_dir: ${join(TENANT_DIRS, 'beta')} }
channel_rest:
  - { name: ping, url_path: /ping, service: echo, security: none }
  - { name: acme/orders, url_path: /t/acme/orders, service: acme/orders, security: none }
  - { name: beta/orders, url_path: /t/beta/orders, service: beta/orders, security: none }
`;

export type MatrixRole = 'platform' | 'owner' | 'developer' | 'viewer';

/** The accounts of the matrix: the platform's `admin`, and acme's owner, developer and viewer. */
export const USERS: Record<MatrixRole, string> = { platform: 'admin', owner: 'acme/owner', developer: 'acme/dev', viewer: 'acme/viewer' };
export const USER_PASSWORD = 'a-tenant-password';

/** Creates acme's accounts (and beta's owner) as the platform administrator. */
export async function createMatrixAccounts(admin: AdminClient): Promise<void> {
  const accounts = [
    { name: 'owner', role: 'owner', tenant: 'acme' },
    { name: 'dev', role: 'developer', tenant: 'acme' },
    { name: 'viewer', role: 'viewer', tenant: 'acme' },
    { name: 'owner', role: 'owner', tenant: 'beta' },
  ];
  for (const a of accounts) expect((await admin.post('/admin/api/users', { ...a, password: USER_PASSWORD })).status).toBe(201);
}

/** A session of the role's account. */
export async function loginAs(k: AdminKernel, role: MatrixRole): Promise<AdminClient> {
  const c = new AdminClient(k.admin);
  const r = await c.send('POST', '/admin/api/login', { username: USERS[role], password: role === 'platform' ? ADMIN_PASSWORD : USER_PASSWORD });
  expect(r.status, r.text).toBe(200);
  c.cookie = (r.headers.get('set-cookie') ?? '').split(';')[0];
  c.csrf = r.body.csrfToken;
  return c;
}
