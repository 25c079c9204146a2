import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PgStore } from '../../../../plugins/store/postgres/store.ts';
import { hashSecret } from '../../../../sdk/plugin/index.ts';
import { terminateBackend, until } from '../../../helpers/cluster.ts';
import { PG_SCHEMA_PREFIX, PG_URL, dropPgSchemas, pgAnswers, pgSchemaUrl } from '../../../helpers/store.ts';
import { AdminClient, basic, callChannel, resourcePath, startAdmin, type AdminKernel } from '../../admin/api/support.ts';

/**
 * Two nodes (kernels with their own data directories) on one PostgreSQL schema: a change made on
 * one is in force on the other without a restart, through the store's notifications, and a node
 * that lost its LISTEN connection catches up when it is back.
 */
const pgRuns = process.env.CI === 'true' || (await pgAnswers());
if (!pgRuns) console.warn(`PostgreSQL does not answer at ${PG_URL}: the two-node tests are skipped`);
const SUITE = `${PG_SCHEMA_PREFIX}cluster_${randomUUID().slice(0, 8)}_`;

const CONFIG = `
security:
  - { name: partner, type: basic_auth, username: partner, password: first-secret }
channel_rest:
  - { name: orders, url_path: /orders, service: echo, security: partner }
  - { name: hello, url_path: /hello, service: hello, security: none }
  - { name: signer, url_path: /sign, service: signer, method: POST, data_format: none, security: none }
  - name: capped
    url_path: /capped
    service: echo
    security: none
    rate_limiting: [{ cidr_list: [], time_range: [{ is_all_day: true, limit: 1, limit_unit: hour }] }]
secrets:
  - { name: hook, value: hook-value-from-the-config, services: [signer] }
`;
const SERVICES = {
  'signer.ts': `import { secret, service } from 'svc/sdk';\nexport default service({ POST: async (ctx) => ({ sig: await secret('hook').hmacSha256Hex(ctx.rawBody) }) });\n`,
};

let a: AdminKernel;
let b: AdminKernel;
let adminA: AdminClient;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  if (!pgRuns) return;
  env = { SVC_STORE: await pgSchemaUrl(`${SUITE}nodes`), SVC_VAULT_KEY: randomBytes(32).toString('base64') };
  a = await startAdmin({ config: CONFIG, env, services: SERVICES });
  b = await startAdmin({ config: CONFIG, env, services: SERVICES });
  adminA = new AdminClient(a.admin);
  expect((await adminA.login()).status).toBe(200);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await dropPgSchemas(SUITE);
});

const status = async (k: AdminKernel, path: string, headers: Record<string, string> = {}) => (await callChannel(k, path, headers)).status;

describe.skipIf(!pgRuns)('two nodes on one PostgreSQL', () => {
  it('a resource created through the admin API on A serves on B, its write-only password included', async () => {
    expect((await adminA.post(resourcePath('security'), { name: 'ops', type: 'basic_auth', username: 'ops', password: 'ops-secret-1' })).status).toBe(201);
    expect((await adminA.post(resourcePath('channel_rest'), { name: 'ops', url_path: '/ops', service: 'echo', security: 'ops' })).status).toBe(201);
    await until(async () => (await status(b, '/ops', basic('ops', 'ops-secret-1'))) === 200, 3_000, 'the channel on B');
    expect(await status(b, '/ops', basic('ops', 'wrong'))).toBe(401);
    // And a rotation through the admin API: the old password refused on B.
    expect((await adminA.put(resourcePath('security', 'ops'), { type: 'basic_auth', username: 'ops', password: 'ops-secret-2' })).status).toBe(200);
    await until(async () => (await status(b, '/ops', basic('ops', 'ops-secret-1'))) === 401, 3_000, 'the old password refused on B');
    expect(await status(b, '/ops', basic('ops', 'ops-secret-2'))).toBe(200);
    // Deleted on A: gone on B.
    expect((await adminA.del(resourcePath('channel_rest', 'ops'))).status).toBe(204);
    await until(async () => (await status(b, '/ops', basic('ops', 'ops-secret-2'))) === 404, 3_000, 'the channel gone on B');
  });

  it('a password rotated on A (svc secdef set-password) is enforced on B within 1 s: the old one refused, the new one accepted', async () => {
    const old = basic('partner', 'first-secret');
    // B has verified the old password, so it sits in B's verification cache.
    expect(await status(b, '/orders', old)).toBe(200);
    expect(await status(b, '/orders', old)).toBe(200);
    const hash = await hashSecret('rotated-secret');
    const started = Date.now();
    await a.kernel.runControl('secdef.set-password', { name: 'partner', hash, configHash: await hashSecret('first-secret') });
    await until(async () => (await status(b, '/orders', old)) === 401, 1_000, 'the old password refused on B');
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await status(b, '/orders', basic('partner', 'rotated-secret'))).toBe(200);
    expect(await status(a, '/orders', old)).toBe(401);
  });

  it('a named secret set on A (svc secret set) signs on B within 1 s', async () => {
    const sign = async (k: AdminKernel) => ((await (await fetch(`${k.url}/sign`, { method: 'POST', body: 'payload' })).json()) as { sig: string }).sig;
    const hmacHex = (key: string) => createHmac('sha256', key).update('payload').digest('hex');
    expect(await sign(b)).toBe(hmacHex('hook-value-from-the-config'));
    const started = Date.now();
    await a.kernel.runControl('secrets.set', { name: 'hook', value: 'hook-value-set-on-a', configValue: 'hook-value-from-the-config' });
    await until(async () => (await sign(b)) === hmacHex('hook-value-set-on-a'), 1_000, 'the new value on B');
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('`limits clear` on A clears the counters on B too', async () => {
    expect(await status(b, '/capped')).toBe(200);
    expect(await status(b, '/capped')).toBe(429);
    await a.kernel.runControl('limits.clear', { kind: 'channel', name: 'capped' });
    await until(async () => (await status(b, '/capped')) === 200, 2_000, 'the counter on B cleared');
  });

  it('a service uploaded on A serves on B once compiled there; a failing upload changes nothing on B; a node started later has it; a delete reaches B', async () => {
    const hello = (word: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ word: '${word}' }) });\n`;
    const body = async (k: AdminKernel) => (await callChannel(k, '/hello')).body as { word?: string };
    const up = (await a.kernel.runControl('services.upload', { file: 'hello.ts', source: hello('one') })) as { serving: string };
    expect(up.serving).toBe('this version');
    await until(async () => (await body(b)).word === 'one', 3_000, 'hello on B');
    await expect(a.kernel.runControl('services.upload', { file: 'hello.ts', source: 'export default service({ handle: ( => 1 });' })).rejects.toThrow(/^not deployed: hello\.ts:1:\d+: .*; the previous version keeps serving$/);
    expect((await body(a)).word).toBe('one');
    await new Promise((r) => setTimeout(r, 300));
    expect((await body(b)).word).toBe('one');
    await a.kernel.runControl('services.upload', { file: 'hello.ts', source: hello('two') });
    await until(async () => (await body(b)).word === 'two', 3_000, 'hello two on B');
    // One deploy history for both nodes: each upload once, though both deployed it; a rollback on B reaches A.
    const history = (await b.kernel.runControl('services.history', { name: 'hello' })) as { versions: Array<{ version: number; origin: string; actor: string }> };
    expect(history.versions.map((v) => [v.version, v.origin, v.actor])).toEqual([
      [2, 'upload', 'cli'],
      [1, 'upload', 'cli'],
    ]);
    await b.kernel.runControl('services.rollback', { name: 'hello', version: 1 });
    await until(async () => (await body(a)).word === 'one', 3_000, 'version 1 on A again');
    await a.kernel.runControl('services.upload', { file: 'hello.ts', source: hello('two') });
    await until(async () => (await body(b)).word === 'two', 3_000, 'hello two on B again');
    const c = await startAdmin({ config: CONFIG, env });
    try {
      expect((await body(c)).word).toBe('two');
    } finally {
      await c.close();
    }
    await a.kernel.runControl('services.delete', { name: 'hello' });
    await until(() => b.kernel.services.get('hello') === undefined, 3_000, 'hello undeployed on B');
  });

  it('a node whose LISTEN connection was terminated reloads on reconnect and sees a change it was not told of', async () => {
    const store = b.kernel.store as PgStore;
    const connects = store.notifications.connects;
    // A change that sends no notification, as one made while B was away would reach it: none.
    await a.kernel.store.run('UPDATE security_secret SET secret_hash = ? WHERE definition = ?', [await hashSecret('while-away'), 'partner']);
    expect(await status(b, '/orders', basic('partner', 'rotated-secret'))).toBe(200);
    await terminateBackend(store.notifications.backendPid!);
    await until(() => store.notifications.connects > connects, 5_000, 'B listening again');
    await until(async () => (await status(b, '/orders', basic('partner', 'while-away'))) === 200, 2_000, 'the new password accepted on B');
    expect(await status(b, '/orders', basic('partner', 'rotated-secret'))).toBe(401);
    // An admin edit made while B reconnects arrives too.
    await terminateBackend(store.notifications.backendPid!);
    expect((await adminA.post(resourcePath('channel_rest'), { name: 'late', url_path: '/late', service: 'echo', security: 'none' })).status).toBe(201);
    await until(async () => (await status(b, '/late')) === 200, 5_000, 'the late channel on B');
  });
});
