import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { newKey } from '../../../../plugins/admin/api/credential.ts';
import { hashSecret } from '../../../../sdk/plugin/index.ts';
import { parseRaw, rawHttp } from '../../../helpers/raw-http.ts';
import { AdminClient, ADMIN_PASSWORD, startAdmin, type AdminKernel } from './support.ts';

const clock = new ManualClock();
let k: AdminKernel;
beforeAll(async () => {
  k = await startAdmin({ clock, config: 'plugins:\n  admin: { config: { session_ttl_minutes: 30, login_failures_per_minute: 3 } }\n' });
});
afterAll(() => k?.close());

const client = () => new AdminClient(k.admin);

describe('admin authentication', () => {
  it('401 without credentials, with the error body, CID header and no session cookie', async () => {
    const r = await client().get('/admin/api/resources');
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ result: 'Error', cid: r.headers.get('x-svc-cid'), details: expect.any(String) });
    expect(r.headers.get('set-cookie')).toBeNull();
  });

  it("a URL the router cannot decode gets svc's error body and a CID on the admin listener too", async () => {
    const r = parseRaw((await rawHttp(k.admin, 'GET /admin/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { end: true })).response);
    expect(r.status).toBe(400);
    expect(r.cid).toBeTruthy();
    expect(r.body).toEqual({ result: 'Error', cid: r.cid, details: 'Malformed request: the URL is not valid (a malformed %-escape)' });
  });

  it('login sets an HttpOnly SameSite=Strict cookie on /admin and returns a CSRF token', async () => {
    const c = client();
    const r = await c.login();
    expect(r.status).toBe(200);
    expect(r.headers.get('x-svc-cid')).toBeTruthy();
    const cookie = r.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^svc_admin_session=[A-Za-z0-9_-]{20,};/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/admin');
    expect(r.body).toEqual({ user: 'admin', role: 'platform', tenant: null, csrfToken: expect.any(String), expiresAt: new Date(clock.now() + 30 * 60_000).toISOString() });
    expect((await c.get('/admin/api/session')).body).toMatchObject({ user: 'admin', csrfToken: r.body.csrfToken });
  });

  it('refuses a wrong password and an unknown account alike (401), and a malformed login (400)', async () => {
    const c = client();
    const r = await c.login('wrong-password');
    expect(r.status).toBe(401);
    expect(r.body.result).toBe('Error');
    const unknown = await c.post('/admin/api/login', { username: 'root', password: ADMIN_PASSWORD });
    expect(unknown.status).toBe(401);
    expect(unknown.body.details).toBe(r.body.details);
    expect((await c.post('/admin/api/login', { password: '' })).status).toBe(400);
    expect((await c.post('/admin/api/login', { username: '', password: 'x' })).status).toBe(400);
    clock.advance(61_000);
    // Each refused login is in the audit log: the name tried and the client's address, never the password.
    const admin = client();
    expect((await admin.login()).status).toBe(200);
    const audit = await admin.get('/admin/api/audit?limit=50');
    const failed = audit.body.items.filter((i: { action: string }) => i.action === 'login (failed)');
    expect(failed.map((i: { actor: string }) => i.actor).sort()).toEqual(['admin', 'root']);
    expect(failed[0]).toMatchObject({ detail: { address: expect.stringMatching(/127\.0\.0\.1/) } });
    expect(audit.text).not.toContain('wrong-password');
  });

  it('refuses a change without the CSRF token (403), accepts it with the token', async () => {
    const c = client();
    await c.login();
    const noToken = await c.send('POST', '/admin/api/resources/pubsub_topic', { name: '/csrf' }, { 'x-csrf-token': '' });
    expect(noToken.status).toBe(403);
    const wrong = await c.send('POST', '/admin/api/resources/pubsub_topic', { name: '/csrf' }, { 'x-csrf-token': 'x'.repeat(32) });
    expect(wrong.status).toBe(403);
    expect((await c.get('/admin/api/resources/pubsub_topic')).body.items).toEqual([]);
    expect((await c.post('/admin/api/resources/pubsub_topic', { name: '/csrf' })).status).toBe(201);
  });

  it('logout ends the session', async () => {
    const c = client();
    await c.login();
    const out = await c.post('/admin/api/logout', undefined);
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect((await c.get('/admin/api/resources')).status).toBe(401);
  });

  it('a session expires after its time to live (injected clock)', async () => {
    const c = client();
    await c.login();
    clock.advance(29 * 60_000);
    expect((await c.get('/admin/api/resources')).status).toBe(200);
    clock.advance(2 * 60_000);
    expect((await c.get('/admin/api/resources')).status).toBe(401);
  });

  it('rate-limits failed logins per client address: 429 with Retry-After, even for the right password, until the minute passes', async () => {
    const c = client();
    for (let i = 0; i < 3; i++) expect((await c.login('wrong-password')).status).toBe(401);
    const limited = await c.login();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    clock.advance(61_000);
    expect((await c.login()).status).toBe(200);
  });

  it('a bearer API key works without CSRF; an unknown one is 401; a deleted one stops working', async () => {
    const key = newKey();
    await k.kernel.runControl('admin.create-key', { id: key.id, name: 'ci', digest: key.digest });
    const c = client();
    c.bearer = key.key;
    expect((await c.get('/admin/api/resources')).status).toBe(200);
    expect((await c.post('/admin/api/resources/pubsub_topic', { name: '/by-key' })).status).toBe(201);
    const audit = await c.get('/admin/api/audit');
    expect(audit.body.items[0]).toMatchObject({ actor: 'key:ci', action: 'create', name: '/by-key' });
    // The key's creation from the command line is one row, the admin plugin's own, not also a generic op row.
    const made = (audit.body.items as Array<{ actor: string; action: string; name: string }>).filter((i) => (i.actor === 'cli' && i.name === 'ci') || i.name === 'admin.create-key');
    expect(made).toEqual([expect.objectContaining({ actor: 'cli', action: 'create-key', name: 'ci' })]);
    const forged = client();
    forged.bearer = key.key.slice(0, -1) + (key.key.endsWith('A') ? 'B' : 'A');
    expect((await forged.get('/admin/api/resources')).status).toBe(401);
    await k.kernel.runControl('admin.delete-key', { name: 'ci' });
    expect((await c.get('/admin/api/resources')).status).toBe(401);
  });

  it('set-password (control op, as the CLI sends it) ends every session and the new password works', async () => {
    const c = client();
    await c.login();
    await k.kernel.runControl('admin.set-password', { hash: await hashSecret('a-new-password') });
    expect((await c.get('/admin/api/resources')).status).toBe(401);
    clock.advance(61_000);
    expect((await client().login(ADMIN_PASSWORD)).status).toBe(401);
    expect((await client().login('a-new-password')).status).toBe(200);
    const logs = JSON.stringify(k.logs);
    for (const secret of [ADMIN_PASSWORD, 'a-new-password']) expect(logs).not.toContain(secret);
  });
});
