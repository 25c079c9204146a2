import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readConfigSource } from '../../../../sdk/plugin/index.ts';
import { AdminClient, basic, callChannel, resourcePath, startAdmin, type AdminKernel } from './support.ts';

/** `svc export` / `svc import` (their control ops) and the API's export/import: a round trip keeps behaviour. */

const source = `
security:
  - { name: partner, type: basic_auth, username: partner, password: partner-secret }
channel_rest:
  - name: orders
    url_path: /orders
    service: echo
    security: partner
    rate_limiting:
      - { cidr_list: [], time_range: [{ is_all_day: true, limit: 3, limit_unit: hour }] }
`;

let a: AdminKernel;
let b: AdminKernel;
beforeAll(async () => {
  a = await startAdmin({ config: source });
  b = await startAdmin({ config: '' });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
});

async function behaviour(k: AdminKernel): Promise<number[]> {
  const statuses: number[] = [];
  statuses.push((await callChannel(k, '/orders')).status);
  statuses.push((await callChannel(k, '/orders', basic('partner', 'wrong'))).status);
  for (let i = 0; i < 4; i++) statuses.push((await callChannel(k, '/orders', basic('partner', 'partner-secret'))).status);
  statuses.push((await callChannel(k, '/keyed', { 'x-api-key': 'key-from-admin' })).status);
  return statuses;
}

describe('export and import', () => {
  it('exports the effective config (file + admin edits) without secrets; imported into a fresh server it behaves the same', async () => {
    const c = new AdminClient(a.admin);
    await c.login();
    expect((await c.post(resourcePath('security'), { name: 'robot', type: 'apikey', key: 'key-from-admin' })).status).toBe(201);
    expect((await c.post(resourcePath('channel_rest'), { name: 'keyed', url_path: '/keyed', service: 'echo', security: 'robot' })).status).toBe(201);
    const exported = (await a.kernel.runControl('config.export', {})) as { yaml: string; variables: string[] };
    expect(exported.yaml).not.toContain('partner-secret');
    expect(exported.yaml).not.toContain('key-from-admin');
    expect(exported.variables).toEqual(['SVC_SECRET_SECURITY_PARTNER_PASSWORD', 'SVC_SECRET_SECURITY_ROBOT_KEY']);
    expect(exported.yaml).toContain('password: ${SVC_SECRET_SECURITY_PARTNER_PASSWORD}');
    expect((await c.get('/admin/api/export')).text).toBe(exported.yaml);

    const expected = await behaviour(a);
    expect(expected).toEqual([401, 401, 200, 200, 200, 429, 200]);
    const sections = readConfigSource(exported.yaml, { SVC_SECRET_SECURITY_PARTNER_PASSWORD: 'partner-secret', SVC_SECRET_SECURITY_ROBOT_KEY: 'key-from-admin' });
    expect(await b.kernel.runControl('config.import', { sections })).toEqual({ created: 4, replaced: 0 });
    expect(await behaviour(b)).toEqual(expected);
  });

  it('an import is checked whole: one bad entry and nothing is imported (the issues name it)', async () => {
    const c = new AdminClient(b.admin);
    await c.login();
    const before = (await c.get(resourcePath('channel_rest'))).body.items;
    const r = await c.post('/admin/api/import', {
      channel_rest: [
        { name: 'fine', url_path: '/fine', service: 'echo', security: 'none' },
        { name: 'broken', url_path: '/broken', service: 'echo', security: 'nobody' },
      ],
      pubsub_topic: [{ name: '/fine' }],
    });
    expect(r.status).toBe(400);
    expect(r.body.issues).toEqual([expect.objectContaining({ section: 'channel_rest', name: 'broken', field: ['security'] })]);
    expect((await c.get(resourcePath('channel_rest'))).body.items).toEqual(before);
    expect((await c.get(resourcePath('pubsub_topic'))).body.items).toEqual([]);
    await expect(b.kernel.runControl('config.import', { sections: { nosuch: [{ name: 'x' }] } })).rejects.toThrow(/nosuch: not a section/);
    const ok = await c.post('/admin/api/import', { pubsub_topic: [{ name: '/fine' }], channel_rest: [{ name: 'orders', url_path: '/orders2', service: 'echo', security: 'partner' }] });
    expect(ok.body).toEqual({ created: 1, replaced: 1 });
    expect((await callChannel(b, '/orders2', basic('partner', 'partner-secret'))).status).toBe(200);
    const audit = (await c.get('/admin/api/audit')).body.items;
    expect(audit.filter((r: any) => r.action === 'import').map((r: any) => `${r.actor} ${r.section} ${r.name}`)).toEqual(expect.arrayContaining(['admin pubsub_topic /fine', 'admin channel_rest orders', 'cli security partner']));
  });
});
