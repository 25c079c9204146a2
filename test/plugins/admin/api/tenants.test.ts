import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueTable } from '../../../../plugins/delivery/use-queue/store.ts';
import type { InvokeRequest } from '../../../../sdk/plugin/index.ts';
import { AdminClient, callChannel, resourcePath, startAdmin, type AdminKernel } from './support.ts';
import { createMatrixAccounts, loginAs, TENANTS_CONFIG } from './tenants.ts';
import { TENANTS_RUN_HERE } from '../../../helpers/kernel.ts';

// Tenants do not start on Node 20 (docs/tenants.md): these suites run on Node 22 and 24.
describe.runIf(TENANTS_RUN_HERE)('with tenants', () => {

/** What a tenant's administrators see and change: names in their tenant, lists filtered, the ops limited to it. */

const CONFIG = `${TENANTS_CONFIG}
  - { name: acme/queued, url_path: /t/acme/queued, service: acme/orders, method: POST, security: none, use_queue: true, delivery: { max_attempts: 1 } }
  - { name: beta/queued, url_path: /t/beta/queued, service: beta/orders, method: POST, security: none, use_queue: true, delivery: { max_attempts: 1 } }
security:
  - { name: acme/erp, type: basic_auth, username: acme-erp, password: "pw-123456" }
  - { name: beta/erp, type: basic_auth, username: beta-erp, password: "pw-123456" }
pubsub_topic: [{ name: /orders }, { name: acme/orders }, { name: beta/orders }]
pubsub_endpoint:
  - { name: acme/erp, security: acme/erp, pub: ['acme/**'], sub: ['acme/**'] }
  - { name: beta/erp, security: beta/erp, pub: ['beta/**'], sub: ['beta/**'] }
pubsub_subscription: [{ endpoint: beta/erp, topics: [beta/orders] }]
`;

let k: AdminKernel;
let admin: AdminClient;
let dev: AdminClient;
let viewer: AdminClient;
beforeAll(async () => {
  k = await startAdmin({ config: CONFIG });
  admin = new AdminClient(k.admin);
  expect((await admin.login()).status).toBe(200);
  await createMatrixAccounts(admin);
  dev = await loginAs(k, 'developer');
  viewer = await loginAs(k, 'viewer');
}, 60_000);
afterAll(() => k?.close());

const op = (c: AdminClient, name: string, args: unknown = {}) => c.post(`/admin/api/ops/${name}`, args);

describe('resources in a tenant', () => {
  it('a developer writes short names; they are stored and shown qualified, the url_path under the tenant prefix, and what a GET shows can be PUT back', async () => {
    const made = await dev.post(resourcePath('channel_rest'), { name: 'shop', url_path: '/shop', service: 'orders', security: 'none' });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ name: 'acme/shop', source: 'admin', entry: { name: 'acme/shop', url_path: '/t/acme/shop', service: 'acme/orders', security: 'none' } });
    expect((await admin.get(resourcePath('channel_rest', 'acme/shop'))).status).toBe(200);
    const shown = (await dev.get(resourcePath('channel_rest', 'shop'))).body;
    const again = await dev.put(resourcePath('channel_rest', 'acme/shop'), shown.entry);
    expect(again.status).toBe(200);
    expect(again.body.entry).toEqual(shown.entry);
    // Applied: the channel answers under the tenant's prefix (its service is not deployed), not at the short path.
    expect((await callChannel(k, '/shop')).status).toBe(404);
    expect((await callChannel(k, '/t/acme/shop')).body.details).not.toBe('No such URL');
  });

  it("another tenant's resource answers 404 exactly as a missing one, whatever the verb", async () => {
    const other = await dev.get(resourcePath('channel_rest', 'beta/orders'));
    const missing = await dev.get(resourcePath('channel_rest', 'beta/no-such'));
    expect([other.status, missing.status]).toEqual([404, 404]);
    expect(other.body.details.replace('orders', 'X')).toBe(missing.body.details.replace('no-such', 'X'));
    expect((await dev.put(resourcePath('channel_rest', 'beta/orders'), { url_path: '/t/beta/orders', service: 'orders', security: 'none' })).status).toBe(404);
    expect((await dev.del(resourcePath('channel_rest', 'beta/orders'))).status).toBe(404);
    expect((await dev.post(resourcePath('channel_rest'), { name: 'beta/stolen', url_path: '/x', service: 'orders', security: 'none' })).status).toBe(404);
    // The platform's `ping` is not acme's: a short name means acme/ping.
    expect((await dev.get(resourcePath('channel_rest', 'ping'))).status).toBe(404);
    expect((await admin.get(resourcePath('channel_rest', 'beta/orders'))).body.entry.url_path).toBe('/t/beta/orders');
  });

  it('the tenants section is the platform\'s; the catalogue counts the tenant\'s entries', async () => {
    const sections = (await dev.get('/admin/api/resources')).body.sections;
    expect(sections.map((s: { name: string }) => s.name)).not.toContain('tenants');
    const ownChannels = (await dev.get(resourcePath('channel_rest'))).body.items.map((i: { name: string }) => i.name);
    expect(ownChannels.every((n: string) => n.startsWith('acme/'))).toBe(true);
    expect(sections.find((s: { name: string }) => s.name === 'channel_rest').count).toBe(ownChannels.length);
    expect((await dev.get(resourcePath('tenants'))).status).toBe(404);
    expect((await admin.get(resourcePath('tenants'))).body.items.map((i: { name: string }) => i.name)).toEqual(['acme', 'beta']);
  });

  it("export gives the tenant's entries only; import takes short names into the tenant", async () => {
    const text = (await dev.get('/admin/api/export')).text;
    expect(text).toContain('name: acme/orders');
    expect(text).not.toMatch(/beta|ping|tenants:/);
    const imported = await dev.post('/admin/api/import', { channel_rest: [{ name: 'imported', url_path: '/imported', service: 'orders', security: 'none' }] });
    expect(imported.body).toEqual({ created: 1, replaced: 0 });
    expect((await admin.get(resourcePath('channel_rest', 'acme/imported'))).body.entry.url_path).toBe('/t/acme/imported');
    expect((await dev.post('/admin/api/import', { tenants: [{ name: 'evil' }] })).status).toBe(400);
  });

  it("lists what the tenants' own config writes (inline or its file), read only, saying where; another tenant's stays hidden", async () => {
    const file = join(k.dir, 'beta.yaml');
    writeFileSync(file, 'cache:\n  - { name: store, services: [orders] }\n');
    const withOwnConfig = CONFIG.replace('{ name: acme, ', '{ name: acme, config: { cache: [{ name: store, services: [orders] }, { name: spare }] }, ').replace('{ name: beta, ', `{ name: beta, config_file: ${file}, `);
    expect(await k.writeConfig(withOwnConfig)).toBe(true);
    try {
      const items = (await dev.get(resourcePath('cache'))).body.items;
      expect(items).toEqual([
        { name: 'acme/store', source: 'tenant_config', origin: 'tenants[acme].config.cache[0]', entry: { name: 'acme/store', services: ['acme/orders'] }, secretsSet: [] },
        { name: 'acme/spare', source: 'tenant_config', origin: 'tenants[acme].config.cache[1]', entry: { name: 'acme/spare' }, secretsSet: [] },
      ]);
      expect((await dev.get('/admin/api/resources')).body.sections.find((s: { name: string }) => s.name === 'cache').count).toBe(2);
      expect((await dev.get(resourcePath('cache', 'store'))).body).toMatchObject({ name: 'acme/store', source: 'tenant_config' });
      // The platform sees every tenant's, each with where it is written.
      const all = (await admin.get(resourcePath('cache'))).body.items;
      expect(all.map((i: { name: string; origin: string }) => [i.name, i.origin])).toEqual([
        ['acme/store', 'tenants[acme].config.cache[0]'],
        ['acme/spare', 'tenants[acme].config.cache[1]'],
        ['beta/store', `tenants[beta].config_file (${file}).cache[0]`],
      ]);
      // beta's answers as a missing one does.
      expect((await dev.get(resourcePath('cache', 'beta/store'))).status).toBe(404);
      // Changed where it is written only: 409 naming the place, for the tenant's administrators and the platform's; nothing changes.
      const put = await dev.put(resourcePath('cache', 'store'), { services: [] });
      expect(put.status).toBe(409);
      expect(put.body).toMatchObject({ cid: expect.any(String), details: "cache 'acme/store' is written in tenants[acme].config.cache[0]: change it there" });
      expect((await dev.post(resourcePath('cache'), { name: 'spare' })).status).toBe(409);
      expect((await dev.del(resourcePath('cache', 'spare'))).status).toBe(409);
      expect((await admin.del(resourcePath('cache', 'beta/store'))).body.details).toBe(`cache 'beta/store' is written in tenants[beta].config_file (${file}).cache[0]: change it there`);
      expect((await dev.del(resourcePath('cache', 'beta/store'))).status).toBe(404);
      const imported = await dev.post('/admin/api/import', { cache: [{ name: 'store' }] });
      expect(imported.status).toBe(400);
      expect(imported.body.issues).toEqual([{ path: ['cache', 0, 'name'], message: "'acme/store' is written in tenants[acme].config.cache[0]: change it there" }]);
      // An export is what the admin API can import back: the tenant's own config stays where it is written.
      expect((await dev.get('/admin/api/export')).text).not.toContain('store');
      expect((await dev.get(resourcePath('cache'))).body.items.map((i: { entry: unknown }) => i.entry)).toEqual([{ name: 'acme/store', services: ['acme/orders'] }, { name: 'acme/spare' }]);
      // A save of the tenant's file shows at once.
      writeFileSync(file, 'cache:\n  - { name: store2 }\n');
      await expect.poll(async () => (await admin.get(resourcePath('cache'))).body.items.map((i: { name: string }) => i.name), { timeout: 5_000 }).toEqual(['acme/store', 'acme/spare', 'beta/store2']);
    } finally {
      expect(await k.writeConfig(CONFIG)).toBe(true);
    }
  });

  it("the interface specification holds the tenant's paths and nothing that names another tenant's", async () => {
    for (const path of ['/admin/api/spec/openapi.json', '/admin/api/spec/channels.json']) {
      const spec = (await dev.get(path)).body;
      expect(Object.keys(spec.paths).length).toBeGreaterThan(0);
      expect(Object.keys(spec.paths).every((p) => p.startsWith('/t/acme/'))).toBe(true);
      expect(JSON.stringify(spec)).not.toMatch(/beta|\/ping/);
    }
  });
});

describe('ops limited to a tenant', () => {
  it('GET /ops lists the ops the role may run: a viewer those that read, and never the platform\'s', async () => {
    const names = async (c: AdminClient) => (await c.get('/admin/api/ops')).body.items.map((o: { op: string }) => o.op);
    const mine = await names(dev);
    expect(mine).toEqual(expect.arrayContaining(['traffic.recent', 'queue.replay', 'job.run', 'limits.clear']));
    expect(mine).not.toContain('config.export');
    expect(await names(viewer)).toEqual(expect.arrayContaining(['traffic.recent', 'queue.list', 'job.list']));
    expect(await names(viewer)).not.toContain('queue.replay');
    expect((await op(dev, 'config.export')).status).toBe(403);
    expect((await op(viewer, 'limits.clear', { kind: 'channel', name: 'orders' })).status).toBe(403);
    expect((await op(dev, 'limits.clear', { kind: 'channel', name: 'orders' })).body.result).toEqual({ cleared: 0 });
    const audit = (await dev.get('/admin/api/audit')).body.items[0];
    expect(audit).toMatchObject({ actor: 'acme/dev', tenant: 'acme', action: 'op', name: 'limits.clear', detail: { args: { kind: 'channel', name: 'acme/orders' } } });
  });

  it("traffic shows the tenant's channels only", async () => {
    for (const path of ['/t/acme/orders', '/t/beta/orders', '/ping']) await callChannel(k, path);
    const recent = (await op(dev, 'traffic.recent', { limit: 500 })).body.result.requests;
    expect(recent.length).toBeGreaterThan(0);
    expect(recent.every((r: { channel: string }) => r.channel.startsWith('acme/'))).toBe(true);
    const stats = (await op(dev, 'traffic.stats', {})).body.result.channels;
    expect(stats.map((c: { channel: string }) => c.channel)).toContain('acme/orders');
    expect(stats.every((c: { channel: string }) => c.channel.startsWith('acme/'))).toBe(true);
    expect((await op(dev, 'traffic.recent', { channel: 'beta/orders' })).status).toBe(404);
    const platform = (await op(admin, 'traffic.recent', { limit: 500 })).body.result.requests.map((r: { channel: string }) => r.channel);
    expect(platform).toEqual(expect.arrayContaining(['acme/orders', 'beta/orders', 'ping']));
  });

  it("queued events: the tenant lists, shows, replays and deletes its own; another's is not found", async () => {
    // Dead events of each tenant's queue, stored as a source that gave up stores them (tenant services cannot be deployed here yet).
    const table = await QueueTable.open(k.kernel.store);
    const dead = { attempts: 1, errors: [{ attempt: 1, cid: 'c', at: new Date().toISOString(), kind: 'Error', message: 'down' }] };
    for (const [id, t] of [[9001, 'acme'], [9002, 'beta']] as const) {
      await table.insert({ id, channel: `${t}/queued`, request: { service: `${t}/orders`, cid: `cid-${id}`, input: {} } as unknown as InvokeRequest, receivedAt: Date.now(), node: 'test', dead });
    }
    const all: Array<{ id: number; service: string }> = (await op(admin, 'queue.list', {})).body.result;
    const acme = all.find((e) => e.service === 'acme/orders')!;
    const beta = all.find((e) => e.service === 'beta/orders')!;
    const listed = (await op(dev, 'queue.list', {})).body.result;
    expect(listed.map((e: { id: number }) => e.id)).toEqual([acme.id]);
    expect((await op(dev, 'queue.list', { channel: 'queued' })).body.result.map((e: { id: number }) => e.id)).toEqual([acme.id]);
    expect((await op(dev, 'queue.show', { id: beta.id })).status).toBe(404);
    expect((await op(viewer, 'queue.show', { id: acme.id })).status).toBe(200);
    expect((await op(dev, 'queue.delete', { all: true })).body.result).toEqual({ deleted: 1, ids: [acme.id] });
    expect((await op(admin, 'queue.list', {})).body.result.map((e: { id: number }) => e.id)).toEqual([beta.id]);
  });

  it("pub/sub: the tenant's topics and its endpoints' subscriptions only, named short or qualified; another's is not found", async () => {
    const names = (items: Array<{ name: string }>) => items.map((t) => t.name);
    expect(names((await op(viewer, 'pubsub.topics')).body.result)).toEqual(['acme/orders']);
    expect(names((await op(admin, 'pubsub.topics')).body.result)).toEqual(expect.arrayContaining(['/orders', 'acme/orders', 'beta/orders']));
    const made = await op(dev, 'pubsub.subscribe', { endpoint: 'erp', topic: '/orders' });
    expect(made.body.result).toMatchObject({ created: true, endpoint: 'acme/erp', topic: 'acme/orders' });
    expect((await op(viewer, 'pubsub.subscribe', { endpoint: 'erp', topic: '/orders' })).status).toBe(403);
    const mine = (await op(dev, 'pubsub.subscriptions')).body.result;
    expect(mine.map((s: { endpoint: string; topic: string }) => [s.endpoint, s.topic])).toEqual([['acme/erp', 'acme/orders']]);
    expect((await op(dev, 'pubsub.messages', { endpoint: 'acme/erp', topic: 'acme/orders' })).body.result.subscription.id).toBe(mine[0].id);
    const beta = (await op(admin, 'pubsub.subscriptions', { endpoint: 'beta/erp' })).body.result[0];
    for (const [name, args] of [
      ['pubsub.messages', { id: beta.id }],
      ['pubsub.unsubscribe', { id: beta.id }],
      ['pubsub.messages', { endpoint: 'beta/erp', topic: 'beta/orders' }],
      ['pubsub.subscribe', { endpoint: 'beta/erp', topic: 'beta/orders' }],
      ['pubsub.subscriptions', { topic: 'beta/orders' }],
    ] as const) {
      expect((await op(dev, name, args)).status, name).toBe(404);
    }
    // The platform's topic is not acme's: a short name means acme's own.
    expect((await op(dev, 'pubsub.subscriptions', { topic: '/orders' })).body.result).toHaveLength(1);
    expect((await op(admin, 'pubsub.subscriptions', { endpoint: 'beta/erp' })).body.result).toHaveLength(1);
  });

  it("services and usage: the tenant's only", async () => {
    const services = (await op(dev, 'services.list')).body.result;
    expect(services.every((s: { name: string }) => s.name.startsWith('acme/'))).toBe(true);
    expect((await op(admin, 'services.list')).body.result.map((s: { name: string }) => s.name)).toContain('echo');
    expect((await op(dev, 'services.source', { name: 'beta/orders' })).status).toBe(404);
    const usage = (await dev.get('/admin/api/usage')).body.tenants;
    expect(usage).toEqual([expect.objectContaining({ tenant: 'acme', cpu: { used_ms_last_minute: expect.any(Number), quota_ms_per_minute: 6000 }, throttled: 0 })]);
    expect((await admin.get('/admin/api/usage')).body.tenants.map((t: { tenant: string }) => t.tenant)).toEqual(['acme', 'beta']);
  });

  it("a developer uploads and deletes the tenant's services, into its own directory whatever it names; a viewer cannot; another tenant's is not found", async () => {
    const source = `import { service } from 'svc/sdk';\nexport default service({ handle() { return { from: 'acme upload' }; } });`;
    const up = await op(dev, 'services.upload', { file: 'orders.ts', source, tenant: 'beta' });
    expect(up.status, up.text).toBe(200);
    expect(up.body.result).toMatchObject({ name: 'acme/orders', deployed: true, serving: 'this version' });
    expect(await callChannel(k, '/t/acme/orders')).toMatchObject({ status: 200, body: { from: 'acme upload' } });
    // beta's service of the same name is untouched.
    expect((await callChannel(k, '/t/beta/orders')).body).not.toEqual({ from: 'acme upload' });
    expect((await op(viewer, 'services.upload', { file: 'x.ts', source })).status).toBe(403);
    expect((await op(dev, 'services.delete', { name: 'beta/orders' })).status).toBe(404);
    const broken = await op(dev, 'services.upload', { file: 'orders.ts', source: 'export default service({' });
    expect(broken.status).toBe(422);
    expect(broken.body.details).toMatch(/^not deployed: orders.ts:1:24: .*; the previous version keeps serving$/);
    // A platform admin uploads into a tenant by naming it.
    const platform = await op(admin, 'services.upload', { file: 'extra.ts', source, tenant: 'beta' });
    expect(platform.body.result).toMatchObject({ name: 'beta/extra', deployed: true });
    expect((await op(admin, 'services.upload', { file: 'extra.ts', source, tenant: 'nobody' })).status).toBe(404);
    const del = await op(dev, 'services.delete', { name: 'orders' });
    expect(del.body.result).toMatchObject({ name: 'acme/orders', deleted: true, deployed: false });
    expect((await op(admin, 'services.delete', { name: 'beta/extra' })).body.result).toMatchObject({ deleted: true });
  });
});
});
