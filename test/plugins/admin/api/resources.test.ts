import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendControl } from '../../../../kernel/control.ts';
import { hashSecret } from '../../../../plugins/security/shared/secrets.ts';
import { openApiProblems } from '../../../helpers/openapi.ts';
import { AdminClient, basic, callChannel, resourcePath, startAdmin, type AdminKernel } from './support.ts';

/** Every generic resource operation, over the admin listener's real socket, on several sections. */

const CONFIG = 'channel_rest:\n  - { name: open, url_path: /open, service: echo, security: none }\n';
let k: AdminKernel;
const c = () => new AdminClient(k.admin);
let admin: AdminClient;

beforeAll(async () => {
  k = await startAdmin({ config: CONFIG });
  admin = c();
  expect((await admin.login()).status).toBe(200);
});
afterAll(() => k?.close());

describe('catalogue', () => {
  it('lists every named-entry section from the composed schema, with JSON Schema, descriptions and write-only keys', async () => {
    const r = await admin.get('/admin/api/resources');
    expect(r.status).toBe(200);
    const byName = new Map<string, any>(r.body.sections.map((s: any) => [s.name, s]));
    for (const name of ['channel_rest', 'security', 'groups', 'outgoing_rest', 'secrets', 'pubsub_topic', 'pubsub_endpoint']) expect(byName.has(name)).toBe(true);
    expect(byName.get('security').writeOnly).toEqual(expect.arrayContaining(['password', 'key', 'client_secret']));
    expect(byName.get('secrets').writeOnly).toEqual(['value']);
    const channel = byName.get('channel_rest').schema;
    expect(channel.properties.url_path.description).toMatch(/URL path/);
    expect(channel.properties.rate_limiting.description).toMatch(/Rate limiting/);
    expect(byName.get('channel_rest').count).toBe(1);
  });

  it("marks the columns of each section's Dashboard list, in order, with their titles", async () => {
    const r = await admin.get('/admin/api/resources');
    // What the Dashboard's lists show (x-svc-list, listColumn in the plugin SDK); sections with
    // none marked fall back to their first scalar fields, which missed an interval job's `every`.
    const columns = (section: any) =>
      Object.entries<any>(section.schema.items?.properties ?? section.schema.properties ?? {})
        .filter(([, field]) => typeof field['x-svc-list'] === 'number')
        .sort(([, a], [, b]) => a['x-svc-list'] - b['x-svc-list'])
        .map(([key, field]) => `${key}:${field.title}`);
    const byName = new Map<string, any>(r.body.sections.map((s: any) => [s.name, s]));
    expect(columns(byName.get('scheduler_job'))).toEqual(['service:Service', 'every:Every', 'cron:Cron', 'at:At', 'enabled:Enabled']);
    expect(columns(byName.get('channel_mqtt'))).toEqual(['topics:Topics', 'service:Service', 'data_format:Data format']);
    expect(columns(byName.get('pubsub_endpoint'))).toEqual(['security:Security', 'pub:Publishes to', 'sub:Subscribes to']);
    expect(columns(byName.get('secrets'))).toEqual(['services:Services']);
    expect(columns(byName.get('groups'))).toEqual(['members:Members']);
    // A cache's ttl (a number or `1h`) and a file channel's source (an object) are no scalars either.
    expect(columns(byName.get('cache'))).toEqual(['backend:Backend', 'ttl:Time to live', 'services:Services']);
    expect(columns(byName.get('channel_file'))).toEqual(['source:Source', 'service:Service', 'pattern:Pattern', 'data_format:Data format']);
  });
});

describe('channels and security definitions', () => {
  it('creates a basic_auth definition whose password is write-only, and a channel using it, both applied at once', async () => {
    const sec = await admin.post(resourcePath('security'), { name: 'partner', type: 'basic_auth', username: 'partner', password: 'first-secret' });
    expect(sec.status).toBe(201);
    expect(sec.body).toEqual({ name: 'partner', source: 'admin', entry: { name: 'partner', type: 'basic_auth', username: 'partner' }, secretsSet: ['password'] });
    expect(JSON.stringify((await admin.get(resourcePath('security', 'partner'))).body)).not.toContain('first-secret');
    const ch = await admin.post(resourcePath('channel_rest'), { name: 'orders', url_path: '/orders', service: 'echo', security: 'partner' });
    expect(ch.status).toBe(201);
    expect((await callChannel(k, '/orders')).status).toBe(401);
    expect(await callChannel(k, '/orders', basic('partner', 'first-secret'))).toEqual({ status: 200, body: { user: 'partner' } });
  });

  it('serves the channels OpenAPI document with the edit in it, and the interface specification holds channels and pub/sub', async () => {
    const channels = await admin.get('/admin/api/spec/channels.json');
    expect(channels.status).toBe(200);
    expect(channels.headers.get('x-svc-cid')).toBeTruthy();
    expect(openApiProblems(channels.body)).toEqual([]);
    expect(channels.body.paths['/orders'].get.security).toEqual([{ partner: [] }]);
    expect(channels.body.components.securitySchemes.partner).toMatchObject({ type: 'http', scheme: 'basic' });
    const spec = await admin.get('/admin/api/spec/openapi.json');
    expect(openApiProblems(spec.body)).toEqual([]);
    expect(Object.keys(spec.body.paths)).toEqual(expect.arrayContaining(['/open', '/orders', '/svc/pubsub/topic/{topic_name}']));
    expect((await c().get('/admin/api/spec/channels.json')).status).toBe(401);
  });

  it('PUT keeps a write-only value left out, rotates it when given, and the old one is refused', async () => {
    const keep = await admin.put(resourcePath('security', 'partner'), { type: 'basic_auth', username: 'partner' });
    expect(keep.status).toBe(200);
    expect(keep.body.secretsSet).toEqual(['password']);
    expect((await callChannel(k, '/orders', basic('partner', 'first-secret'))).status).toBe(200);
    expect((await admin.put(resourcePath('security', 'partner'), { type: 'basic_auth', username: 'partner', password: 'second-secret' })).status).toBe(200);
    expect((await callChannel(k, '/orders', basic('partner', 'first-secret'))).status).toBe(401);
    expect((await callChannel(k, '/orders', basic('partner', 'second-secret'))).status).toBe(200);
  });

  it('a rate-limit rule on a channel applies at once (429 past the limit)', async () => {
    const rule = { cidr_list: [], time_range: [{ is_all_day: true, limit: 2, limit_unit: 'hour' }] };
    const r = await admin.put(resourcePath('channel_rest', 'orders'), { url_path: '/orders', service: 'echo', security: 'partner', rate_limiting: [rule] });
    expect(r.status).toBe(200);
    expect(r.body.entry.rate_limiting).toEqual([rule]);
    const auth = basic('partner', 'second-secret');
    expect((await callChannel(k, '/orders', auth)).status).toBe(200);
    expect((await callChannel(k, '/orders', auth)).status).toBe(200);
    expect((await callChannel(k, '/orders', auth)).status).toBe(429);
  });

  it('refuses a change that does not validate, with each issue located in its resource, and changes nothing', async () => {
    const r = await admin.post(resourcePath('channel_rest'), { name: 'bad', url_path: 'no-slash', service: 'echo', security: 'nobody' });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ result: 'Error', cid: r.headers.get('x-svc-cid') });
    expect(r.body.issues).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: ['channel_rest', 2, 'url_path'], section: 'channel_rest', name: 'bad', field: ['url_path'], message: 'must start with /' })]),
    );
    const clash = await admin.post(resourcePath('channel_rest'), { name: 'clash', url_path: '/open', service: 'echo', security: 'none' });
    expect(clash.status).toBe(400);
    expect(clash.body.issues[0]).toMatchObject({ section: 'channel_rest', name: 'clash', field: ['url_path'] });
    expect((await admin.get(resourcePath('channel_rest'))).body.items.map((i: any) => i.name)).toEqual(['open', 'orders']);
    const rename = await admin.put(resourcePath('channel_rest', 'orders'), { name: 'other', url_path: '/orders', service: 'echo', security: 'none' });
    expect(rename.status).toBe(400);
    expect((await admin.post(resourcePath('channel_rest'), { name: 'open', url_path: '/x', service: 'echo', security: 'none' })).status).toBe(409);
    expect((await admin.get(resourcePath('nosuch'))).status).toBe(404);
    expect((await admin.get(resourcePath('channel_rest', 'nosuch'))).status).toBe(404);
  });

  it('deletes an entry of the config file (an override that hides it) and one made through the API', async () => {
    expect((await admin.del(resourcePath('channel_rest', 'open'))).status).toBe(204);
    expect((await callChannel(k, '/open')).status).toBe(404);
    expect((await admin.get('/admin/api/overrides')).body.items).toContainEqual(expect.objectContaining({ section: 'channel_rest', name: 'open', action: 'delete', updatedBy: 'admin' }));
    expect((await admin.del('/admin/api/overrides/channel_rest/open')).status).toBe(204);
    expect((await callChannel(k, '/open')).status).toBe(200);
    expect((await admin.del(resourcePath('channel_rest', 'open'))).status).toBe(204);
    expect((await admin.del('/admin/api/overrides/channel_rest/open')).status).toBe(204);
  });
});

describe('groups, outgoing connections, named secrets, pub/sub', () => {
  it('group membership: a member calls the group channel; removing it revokes the client at once', async () => {
    expect((await admin.post(resourcePath('security'), { name: 'app-key', type: 'apikey', key: 'k-123456' })).status).toBe(201);
    expect((await admin.post(resourcePath('groups'), { name: 'clients', members: ['partner', 'app-key'] })).status).toBe(201);
    expect((await admin.post(resourcePath('channel_rest'), { name: 'grouped', url_path: '/grouped', service: 'echo', security: 'clients' })).status).toBe(201);
    expect((await callChannel(k, '/grouped', { 'x-api-key': 'k-123456' })).status).toBe(200);
    expect((await admin.put(resourcePath('groups', 'clients'), { members: ['partner'] })).status).toBe(200);
    expect((await callChannel(k, '/grouped', { 'x-api-key': 'k-123456' })).status).toBe(401);
    expect((await admin.get(resourcePath('groups', 'clients'))).body.entry).toEqual({ name: 'clients', members: ['partner'] });
  });

  it('outgoing connection with a bearer_token definition: client_secret write-only', async () => {
    const def = { name: 'crm-oauth', type: 'bearer_token', username: 'client-1', client_secret: 's3cret-value', auth_server_url: 'http://127.0.0.1:9/token' };
    expect((await admin.post(resourcePath('security'), def)).status).toBe(201);
    const out = await admin.post(resourcePath('outgoing_rest'), { name: 'crm', address: 'http://127.0.0.1:9', security: 'crm-oauth' });
    expect(out.status).toBe(201);
    expect(out.body.entry).toEqual({ name: 'crm', address: 'http://127.0.0.1:9', security: 'crm-oauth' });
    const listed = await admin.get(resourcePath('security'));
    expect(listed.text).not.toContain('s3cret-value');
    expect(listed.body.items.find((i: any) => i.name === 'crm-oauth').secretsSet).toEqual(['client_secret']);
    const bad = await admin.put(resourcePath('outgoing_rest', 'crm'), { address: 'ftp://x', security: 'crm-oauth' });
    expect(bad.status).toBe(400);
    expect(bad.body.issues[0]).toMatchObject({ section: 'outgoing_rest', name: 'crm', field: ['address'] });
  });

  it('named secret: the value is write-only; services may be changed without resending it', async () => {
    expect((await admin.post(resourcePath('secrets'), { name: 'hook', value: 'hook-secret', services: ['echo'] })).status).toBe(201);
    const put = await admin.put(resourcePath('secrets', 'hook'), { services: [] });
    expect(put.body).toEqual({ name: 'hook', source: 'admin', entry: { name: 'hook', services: [] }, secretsSet: ['value'] });
  });

  it('a value set outside the file (`svc secret set`, `svc secdef set-password`, through the control socket) shows as set, never its value', async () => {
    await k.writeConfig(`${CONFIG}secrets:\n  - { name: cli-token, services: [] }\nsecurity:\n  - { name: cli-partner, type: basic_auth, username: cli-partner }\n  - { name: cli-key, type: apikey }\n`);
    const setOf = async (section: string, name: string) => (await admin.get(resourcePath(section, name))).body.secretsSet;
    expect(await setOf('secrets', 'cli-token')).toEqual([]);
    const socket = join(k.dir, 'data', 'control.sock');
    expect(await sendControl(socket, 'secrets.set', { name: 'cli-token', value: 'cli-token-value', configValue: null })).toMatchObject({ ok: true });
    const password = await hashSecret('cli-partner-password');
    expect(await sendControl(socket, 'secdef.set-password', { name: 'cli-partner', hash: password, configHash: null })).toMatchObject({ ok: true });
    expect(await setOf('secrets', 'cli-token')).toEqual(['value']);
    expect(await setOf('security', 'cli-partner')).toEqual(['password']);
    const listed = await admin.get(resourcePath('security'));
    expect(listed.body.items.find((i: any) => i.name === 'cli-partner').secretsSet).toEqual(['password']);
    // An API key definition without a key has a generated one nobody knows: not set, and no password either.
    expect(listed.body.items.find((i: any) => i.name === 'cli-key').secretsSet).toEqual([]);
    expect(JSON.stringify((await admin.get(resourcePath('secrets'))).body)).not.toContain('cli-token-value');
  });

  it('pub/sub topic (a name with slashes) and endpoint', async () => {
    expect((await admin.post(resourcePath('pubsub_topic'), { name: '/orders/new' })).status).toBe(201);
    expect((await admin.get(resourcePath('pubsub_topic', '/orders/new'))).body.entry).toEqual({ name: '/orders/new' });
    expect((await admin.post(resourcePath('pubsub_endpoint'), { name: 'partner-ep', security: 'partner', pub: ['/orders/**'], sub: ['/orders/**'] })).status).toBe(201);
    const pub = await fetch(`${k.url}/svc/pubsub/topic/orders/new`, { method: 'POST', headers: { ...basic('partner', 'second-secret'), 'content-type': 'application/json' }, body: JSON.stringify({ data: 'x' }) });
    expect(pub.status).toBe(200);
    expect((await admin.put(resourcePath('pubsub_topic', '/orders/new'), { max_depth: 0 })).status).toBe(400);
  });
});

describe('ops, audit, OpenAPI', () => {
  it('lists the control ops with their argument schemas and runs one', async () => {
    const ops = await admin.get('/admin/api/ops');
    const names = ops.body.items.map((o: any) => o.op);
    for (const op of ['limits.clear', 'queue.replay', 'secdef.set-password', 'secrets.set', 'config.export']) expect(names).toContain(op);
    expect(ops.body.items.find((o: any) => o.op === 'limits.clear').args.properties.kind.description).toBe('Level of the owner.');
    const run = await admin.post('/admin/api/ops/limits.clear', { kind: 'channel', name: 'orders' });
    expect(run.status).toBe(200);
    expect(run.body.result).toEqual({ cleared: expect.any(Number) });
    expect((await callChannel(k, '/orders', basic('partner', 'second-secret'))).status).toBe(200);
    const bad = await admin.post('/admin/api/ops/limits.clear', { kind: 'nothing' });
    expect(bad.status).toBe(400);
    expect(bad.body.issues.map((i: any) => i.path)).toEqual(expect.arrayContaining([['kind'], ['name']]));
    expect((await admin.post('/admin/api/ops/no.such', {})).status).toBe(404);
    expect((await admin.post('/admin/api/ops/secrets.set', { name: 'hook', value: 'rotated-value', configValue: 'hook-secret' })).status).toBe(200);
    expect(ops.body.items.find((o: any) => o.op === 'config.export').readOnly).toBe(true);
    expect(ops.body.items.find((o: any) => o.op === 'limits.clear').readOnly).toBeUndefined();
    expect((await admin.post('/admin/api/ops/config.export', {})).status).toBe(200);
    expect((await admin.post('/admin/api/ops/cluster.nodes', {})).body.result.nodes).toContainEqual(expect.objectContaining({ self: true, state: 'up' }));
  });

  it('audits who did what and when, never secret values', async () => {
    const r = await admin.get('/admin/api/audit?limit=200');
    expect(r.status).toBe(200);
    expect(r.body.items).toContainEqual(expect.objectContaining({ actor: 'admin', action: 'create', section: 'security', name: 'partner' }));
    // A new password and nothing else: the secret is said to have changed, never shown.
    expect(r.body.items).toContainEqual(expect.objectContaining({ actor: 'admin', action: 'update', section: 'security', name: 'partner', detail: { keys: ['type', 'username'], secretsChanged: ['password'], changed: {} } }));
    // What an edit changed, field by field, before and after; a delete, what was there.
    const rule = { cidr_list: [], time_range: [{ is_all_day: true, limit: 2, limit_unit: 'hour' }] };
    expect(r.body.items).toContainEqual(expect.objectContaining({ action: 'update', section: 'channel_rest', name: 'orders', detail: expect.objectContaining({ changed: { rate_limiting: { after: [rule] } } }) }));
    expect(r.body.items).toContainEqual(expect.objectContaining({ action: 'delete', section: 'channel_rest', name: 'open', detail: { changed: expect.objectContaining({ url_path: { before: '/open' }, service: { before: 'echo' } }) } }));
    expect(r.body.items).toContainEqual(expect.objectContaining({ action: 'op', name: 'secrets.set', detail: { args: { name: 'hook', value: '[redacted]', configValue: '[redacted]' } } }));
    expect(r.body.items[0].at).toMatch(/^\d{4}-\d\d-\d\dT/);
    // Reading ops (the Dashboard polls some) are not audited; ops that change things are.
    expect(r.body.items.filter((i: any) => i.name === 'config.export' || i.name === 'cluster.nodes')).toEqual([]);
    expect(r.body.items).toContainEqual(expect.objectContaining({ action: 'op', name: 'limits.clear' }));
    for (const secret of ['first-secret', 'second-secret', 's3cret-value', 'hook-secret', 'rotated-value', 'k-123456']) expect(r.text).not.toContain(secret);
  });

  it("audits an op the admin API refused with svc's own error (a deploy that did not compile) as failed, with the error", async () => {
    const broken = await admin.post('/admin/api/ops/services.upload', { file: 'audited.ts', source: 'export default service({' });
    expect(broken.status).toBe(422);
    const items = (await admin.get('/admin/api/audit?limit=50')).body.items as Array<{ actor: string; action: string; name: string; detail: { args: { file: string }; error?: string } }>;
    const row = items.find((i) => i.name === 'services.upload' && i.detail.args.file === 'audited.ts');
    expect(row).toMatchObject({ actor: 'admin', action: 'op (failed)', detail: { error: expect.stringMatching(/^not deployed: audited.ts:1:\d+: /) } });
    // A service's source is a long argument: the row keeps its size (the deploy history keeps the text).
    const long = `import { service } from 'svc/sdk';\n${'// padding\n'.repeat(200)}export default service({ handle() { return 1; } });`;
    expect((await admin.post('/admin/api/ops/services.upload', { file: 'audited.ts', source: long })).status).toBe(200);
    const rows = (await admin.get('/admin/api/audit?limit=50')).body.items as Array<{ action: string; name: string; detail: { args: { file: string; source: string } } }>;
    expect(rows.find((i) => i.action === 'op' && i.name === 'services.upload' && i.detail.args.file === 'audited.ts')?.detail.args.source).toBe(`[${JSON.stringify(long).length} characters]`);
    // Refused before it ran (its arguments invalid): no row, as before.
    expect((await admin.post('/admin/api/ops/services.upload', { file: 42 })).status).toBe(400);
  });

  it("audits the svc commands' ops (the control socket) as cli: those that change something, failed or not, secrets redacted", async () => {
    await k.kernel.runControl('limits.clear', { kind: 'channel', name: 'orders' });
    await k.kernel.runControl('secrets.set', { name: 'hook', value: 'cli-secret-value', configValue: 'hook-secret' });
    await expect(k.kernel.runControl('queue.replay', { id: 999_999 })).resolves.toMatchObject({ replayed: 0 });
    await expect(k.kernel.runControl('services.rollback', { name: 'echo', version: 99 })).rejects.toThrow('has no version 99');
    await k.kernel.runControl('config.export', {});
    const items = (await admin.get('/admin/api/audit?limit=50')).body.items as Array<{ actor: string; action: string; name: string; detail: unknown }>;
    const cli = items.filter((i) => i.actor === 'cli');
    expect(cli).toContainEqual(expect.objectContaining({ action: 'op', name: 'limits.clear', detail: { args: { kind: 'channel', name: 'orders' } } }));
    expect(cli).toContainEqual(expect.objectContaining({ action: 'op', name: 'secrets.set', detail: { args: { name: 'hook', value: '[redacted]', configValue: '[redacted]' } } }));
    expect(cli).toContainEqual(expect.objectContaining({ action: 'op', name: 'queue.replay' }));
    expect(cli).toContainEqual(expect.objectContaining({ action: 'op (failed)', name: 'services.rollback', detail: { args: { name: 'echo', version: 99 }, error: expect.stringContaining('has no version 99') } }));
    // Reading ops are not audited from the command line either.
    expect(cli.filter((i) => i.name === 'config.export')).toEqual([]);
    expect(JSON.stringify(items)).not.toContain('cli-secret-value');
  });

  it('serves an OpenAPI 3.1 document with paths for every section and op', async () => {
    const r = await admin.get('/admin/api/openapi.json');
    expect(r.body.openapi).toBe('3.1.0');
    const catalogue = (await admin.get('/admin/api/resources')).body.sections.map((s: any) => s.name);
    for (const s of catalogue) {
      expect(r.body.paths[`/admin/api/resources/${s}`]).toHaveProperty('post');
      expect(r.body.paths[`/admin/api/resources/${s}/{name}`]).toHaveProperty('put');
      expect(r.body.components.schemas[`${s}.entry`]).toBeTypeOf('object');
    }
    expect(r.body.paths['/admin/api/ops/limits.clear'].post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/op.limits.clear' });
    const refs = JSON.stringify(r.body).match(/#\/components\/schemas\/[^"]+/g) ?? [];
    for (const ref of new Set(refs)) expect(r.body.components.schemas).toHaveProperty([ref.slice('#/components/schemas/'.length)]);
    expect(r.body.components.securitySchemes).toHaveProperty('bearer');
    expect(openApiProblems(r.body)).toEqual([]);
  });
});
