import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, AdminClient, resourcePath, startAdmin, type AdminKernel } from './support.ts';
import { createMatrixAccounts, loginAs, TENANTS_CONFIG, USER_PASSWORD } from './tenants.ts';
import { TENANTS_RUN_HERE } from '../../../helpers/kernel.ts';

// Tenants do not start on Node 20 (docs/tenants.md): these suites run on Node 22 and 24.
describe.runIf(TENANTS_RUN_HERE)('with tenants', () => {

/** Accounts and API keys with roles and tenants: who may make which, what their sessions reach, what the audit log says. */

let k: AdminKernel;
let admin: AdminClient;
beforeAll(async () => {
  k = await startAdmin({ config: TENANTS_CONFIG });
  admin = new AdminClient(k.admin);
  expect((await admin.login()).status).toBe(200);
  await createMatrixAccounts(admin);
}, 60_000);
afterAll(() => k?.close());

describe('accounts', () => {
  it("a tenant's account logs in as <tenant>/<name> and gets its role and tenant", async () => {
    const dev = await loginAs(k, 'developer');
    const session = await dev.get('/admin/api/session');
    expect(session.body).toMatchObject({ user: 'acme/dev', role: 'developer', tenant: 'acme', csrfToken: expect.any(String) });
    expect((await dev.send('POST', '/admin/api/login', { username: 'dev', password: USER_PASSWORD })).status).toBe(401);
  });

  it('a platform administrator gives any role, of a declared tenant, checked', async () => {
    const made = await admin.post('/admin/api/users', { name: 'ops', password: USER_PASSWORD, role: 'platform' });
    expect(made.status).toBe(201);
    expect(made.body).toEqual({ name: 'ops', role: 'platform', tenant: null });
    const bad = async (body: Record<string, unknown>, path: string) => {
      const r = await admin.post('/admin/api/users', { name: 'x', password: USER_PASSWORD, ...body });
      expect(r.status).toBe(400);
      expect(r.body.issues[0].path).toEqual([path]);
    };
    await bad({ role: 'owner' }, 'role');
    await bad({ role: 'platform', tenant: 'acme' }, 'role');
    await bad({ role: 'viewer', tenant: 'nobody' }, 'tenant');
    expect((await admin.post('/admin/api/users', { name: 'x', password: 'short', role: 'platform' })).status).toBe(400);
    expect((await admin.post('/admin/api/users', { name: 'ops', password: USER_PASSWORD, role: 'platform' })).status).toBe(409);
    expect((await admin.del('/admin/api/users/admin')).status).toBe(409);
  });

  it("a tenant's owner makes accounts of its tenant only, with tenant roles, named in it", async () => {
    const owner = await loginAs(k, 'owner');
    const made = await owner.post('/admin/api/users', { name: 'tester', password: USER_PASSWORD, role: 'developer' });
    expect(made.status).toBe(201);
    expect(made.body).toEqual({ name: 'acme/tester', role: 'developer', tenant: 'acme' });
    expect((await owner.post('/admin/api/users', { name: 'root', password: USER_PASSWORD, role: 'platform' })).status).toBe(403);
    expect((await owner.post('/admin/api/users', { name: 'spy', password: USER_PASSWORD, role: 'owner', tenant: 'beta' })).status).toBe(404);
    const listed = (await owner.get('/admin/api/users')).body.items.map((u: { name: string }) => u.name);
    expect(listed).toEqual(['acme/dev', 'acme/owner', 'acme/tester', 'acme/viewer']);
    // The platform's and another tenant's accounts do not exist for it.
    for (const name of ['admin', 'beta/owner']) expect((await owner.del(`/admin/api/users/${encodeURIComponent(name)}`)).status).toBe(404);
  });

  it("deleting an account ends its sessions at once", async () => {
    expect((await admin.post('/admin/api/users', { name: 'temp', password: USER_PASSWORD, role: 'viewer', tenant: 'acme' })).status).toBe(201);
    const temp = new AdminClient(k.admin);
    const login = await temp.send('POST', '/admin/api/login', { username: 'acme/temp', password: USER_PASSWORD });
    temp.cookie = (login.headers.get('set-cookie') ?? '').split(';')[0];
    expect((await temp.get('/admin/api/resources')).status).toBe(200);
    const owner = await loginAs(k, 'owner');
    expect((await owner.del('/admin/api/users/temp')).status).toBe(204);
    expect((await temp.get('/admin/api/resources')).status).toBe(401);
    expect((await temp.send('POST', '/admin/api/login', { username: 'acme/temp', password: USER_PASSWORD })).status).toBe(401);
  });
});

describe('API keys', () => {
  it("a tenant owner's key has the role it was given, in its tenant; the audit log names the key and the tenant", async () => {
    const owner = await loginAs(k, 'owner');
    const made = await owner.post('/admin/api/keys', { name: 'deploy', role: 'developer' });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ name: 'acme/deploy', role: 'developer', tenant: 'acme', key: expect.stringMatching(/^svcadm_/) });
    const keyClient = new AdminClient(k.admin);
    keyClient.bearer = made.body.key;
    expect((await keyClient.get('/admin/api/session')).body).toEqual({ user: 'key:acme/deploy', role: 'developer', tenant: 'acme' });
    const created = await keyClient.post(resourcePath('channel_rest'), { name: 'by-key', url_path: '/by-key', service: 'orders', security: 'none' });
    expect(created.status).toBe(201);
    expect(created.body.name).toBe('acme/by-key');
    const rows = (await owner.get('/admin/api/audit')).body.items;
    expect(rows[0]).toMatchObject({ actor: 'key:acme/deploy', tenant: 'acme', action: 'create', section: 'channel_rest', name: 'acme/by-key' });
    expect((await owner.get('/admin/api/keys')).body.items.map((x: { name: string }) => x.name)).toEqual(['acme/deploy']);
    const viewerKey = await owner.post('/admin/api/keys', { name: 'read', role: 'viewer' });
    keyClient.bearer = viewerKey.body.key;
    expect((await keyClient.del(resourcePath('channel_rest', 'acme/by-key'))).status).toBe(403);
    expect((await owner.del('/admin/api/keys/deploy')).status).toBe(204);
    keyClient.bearer = made.body.key;
    expect((await keyClient.get('/admin/api/resources')).status).toBe(401);
  });
});

describe('audit log', () => {
  it("records the account and the tenant; a tenant's administrators read their tenant's rows, a platform one filters by tenant", async () => {
    const dev = await loginAs(k, 'developer');
    expect((await dev.post(resourcePath('channel_rest'), { name: 'audited', url_path: '/audited', service: 'orders', security: 'none' })).status).toBe(201);
    expect((await admin.post(resourcePath('channel_rest'), { name: 'beta/audited', url_path: '/t/beta/audited', service: 'beta/orders', security: 'none' })).status).toBe(201);
    const mine = (await dev.get('/admin/api/audit')).body.items;
    expect(mine[0]).toMatchObject({ actor: 'acme/dev', tenant: 'acme', action: 'create', name: 'acme/audited' });
    expect(mine.every((r: { tenant: string }) => r.tenant === 'acme')).toBe(true);
    expect((await dev.get('/admin/api/audit?tenant=beta')).body.items).toEqual([]);
    const beta = (await admin.get('/admin/api/audit?tenant=beta')).body.items;
    expect(beta[0]).toMatchObject({ actor: 'admin', tenant: 'beta', name: 'beta/audited' });
    expect(beta.every((r: { tenant: string }) => r.tenant === 'beta')).toBe(true);
  });

  it('logs no password', () => {
    const logs = JSON.stringify(k.logs);
    for (const secret of [ADMIN_PASSWORD, USER_PASSWORD]) expect(logs).not.toContain(secret);
    expect(k.logs.some((l) => l.msg === 'admin login' && l.user === 'acme/dev' && l.tenant === 'acme')).toBe(true);
  });
});
});
