import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TENANTS_RUN_HERE } from '../../../helpers/kernel.ts';
import { basic, json, startPubSub, type PubSubKernel } from './helpers.ts';

/**
 * Tenants' pub/sub over both REST variants and the SDK, with real isolates and a real SQLite
 * file (and on PostgreSQL, in the postgres project, where the engine keeps messages in the
 * database for every node): two tenants each have a topic `/orders`, named short by their endpoints and services and
 * kept apart; no name reaches another tenant's topic; publishes_per_second and pubsub_bytes
 * refuse with 429 TENANT_QUOTA and the CID, counted, and hold no other tenant back.
 */

/** Publishes what the input says and answers with the msgId, or the error it caught. */
const SHOP = `import { service, publish } from 'svc/sdk';
export default service({
  async handle(ctx) {
    try {
      return await publish(ctx.input.topic, ctx.input.data, { hasGd: false });
    } catch (e) {
      return { error: e.name, status: e.status, message: e.message };
    }
  },
});`;

const TENANTS = ['acme', 'globex', 'rated', 'small'] as const;
type Tenant = (typeof TENANTS)[number];
const QUOTAS: Partial<Record<Tenant, string>> = { rated: '{ publishes_per_second: 3 }', small: '{ pubsub_bytes: 40 }' };
const auth = (t: Tenant | 'platform') => basic(`${t}-erp`, `${t}-password-1`);

function tenantEntry(root: string, t: Tenant): string {
  mkdirSync(join(root, t), { recursive: true });
  writeFileSync(join(root, t, 'shop.js'), SHOP);
  return `  - name: ${t}
    services_dir: ${join(root, t)}
    quotas: ${QUOTAS[t] ?? '{}'}
    config:
      security: [{ name: erp, type: basic_auth, username: ${t}-erp, password: ${t}-password-1 }]
      pubsub_topic: [{ name: /orders }, { name: /events }]
      pubsub_endpoint:
        - { name: erp, security: erp, pub: ['/**'], sub: ['/**'] }
        - { name: shop, services: [shop], pub: ['/orders'] }
      channel_rest: [{ name: shop, url_path: /shop, service: shop, security: none }]
`;
}

describe.runIf(TENANTS_RUN_HERE)("tenants' pub/sub over the REST variants and the SDK", () => {
  let root: string;
  let k: PubSubKernel;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'svc-tenant-pubsub-'));
    k = await startPubSub({
      config: `
tenants:
${TENANTS.map((t) => tenantEntry(root, t)).join('')}
security:
  - { name: sec.platform, type: basic_auth, username: platform-erp, password: platform-password-1 }
pubsub_topic: [{ name: /orders }]
pubsub_endpoint:
  - { name: platform, security: sec.platform, pub: ['/**'], sub: ['/**'] }
`,
    });
  });
  afterAll(async () => {
    await k?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const publishA = (who: Tenant | 'platform', topic: string, data: unknown) => k.call('POST', `/svc/pubsub/topic/${topic}`, auth(who), { data, has_gd: false });
  const getA = async (who: Tenant | 'platform', topic: string) => {
    const res = await k.call('PATCH', `/svc/pubsub/topic/${topic}`, auth(who));
    expect(res.statusCode, res.body).toBe(200);
    return json(res) as Array<{ data: unknown; topic_name: string }>;
  };
  const shop = async (t: Tenant, body: unknown) => json(await k.call('POST', `/t/${t}/shop`, undefined, body)) as Record<string, unknown>;
  const throttled = (t: Tenant) => k.kernel.api.sandboxStats().tenants.find((f) => f.tenant === t)?.throttled;

  it('keeps two tenants\' topics of one name apart over variant A, and shows them by their short names', async () => {
    for (const who of ['acme', 'globex', 'platform'] as const) expect((await k.call('POST', '/svc/pubsub/subscribe/topic/orders', auth(who))).statusCode).toBe(200);
    for (const who of ['acme', 'globex', 'platform'] as const) expect((await publishA(who, 'orders', `from ${who}`)).statusCode).toBe(200);
    for (const who of ['acme', 'globex', 'platform'] as const) expect(await getA(who, 'orders')).toEqual([expect.objectContaining({ data: `from ${who}`, topic_name: '/orders' })]);
    const topics = (await k.kernel.api.controlOps().find((o) => o.op === 'pubsub.topics')!.handler({})) as Array<{ name: string }>;
    expect(topics.map((t) => t.name)).toEqual(expect.arrayContaining(['/orders', 'acme/orders', 'globex/orders']));
  });

  it('keeps them apart over variant B, its meta naming the topic short', async () => {
    for (const who of ['acme', 'globex'] as const) {
      expect((await k.call('POST', '/pubsub/subscribe/topic/events', auth(who))).statusCode).toBe(200);
      expect((await k.call('POST', '/pubsub/topic/events', auth(who), { data: `event of ${who}` })).statusCode).toBe(200);
    }
    for (const who of ['acme', 'globex'] as const) {
      const got = json(await k.call('POST', '/pubsub/messages/get', auth(who), { max_messages: 10 })) as { messages: Array<{ data: unknown; meta: { topic_name: string } }> };
      expect(got.messages).toEqual([{ data: `event of ${who}`, meta: expect.objectContaining({ topic_name: '/events' }) }]);
    }
  });

  it("reaches no other tenant's topic by any name: it answers as a topic that does not exist, naming nobody", async () => {
    const missing = await publishA('acme', 'no-such-topic', 1);
    expect(missing.statusCode).toBe(404);
    const shape = (res: LightMyRequestResponse) => ({ status: res.statusCode, body: { ...(json(res) as object), cid: 'x' } });
    for (const name of ['globex/orders', 'globex%2Forders', '%2Fglobex%2Forders', 'acme/orders']) {
      expect(shape(await publishA('acme', name, 'stolen')), name).toEqual(shape(missing));
      expect(shape(await k.call('POST', `/svc/pubsub/subscribe/topic/${name}`, auth('acme'))), name).toEqual(shape(missing));
    }
    const missingB = await k.call('POST', '/pubsub/topic/no-such-topic', auth('acme'), { data: 1 });
    const otherB = await k.call('POST', '/pubsub/topic/globex/orders', auth('acme'), { data: 1 });
    expect(otherB.statusCode).toBe(404);
    expect({ ...(json(otherB) as object), cid: 'x' }).toEqual({ ...(json(missingB) as object), cid: 'x' });
    // The platform's endpoints do not reach tenants' topics either.
    expect((await publishA('platform', 'acme/orders', 'stolen')).statusCode).toBe(404);
    expect(await getA('globex', 'orders')).toEqual([]);
    expect(await getA('acme', 'orders')).toEqual([]);
  });

  it("a tenant's service publishes to its tenant's topics by their short names, and to no other's", async () => {
    expect(await shop('acme', { topic: '/orders', data: 'from acme/shop' })).toMatchObject({ msgId: expect.stringMatching(/^svcpsm/) });
    expect(await getA('acme', 'orders')).toEqual([expect.objectContaining({ data: 'from acme/shop', topic_name: '/orders' })]);
    expect(await getA('globex', 'orders')).toEqual([]);
    expect(await getA('platform', 'orders')).toEqual([]);
    for (const topic of ['/globex/orders', 'globex/orders', 'acme/orders', '/events']) expect(await shop('acme', { topic, data: 'x' }), topic).toMatchObject({ error: 'Forbidden', status: 403 });
  });

  it('publishes_per_second: past it 429 TENANT_QUOTA with the CID and Retry-After in both variants and to services, counted; other tenants go on', async () => {
    const refusedA = await untilRefused(() => publishA('rated', 'orders', 'x'));
    expect(json(refusedA)).toEqual({ result: 'Error', cid: refusedA.headers['x-svc-cid'], details: expect.stringMatching(/^Quota publishes_per_second reached: the tenant published 3 messages in the last second, of 3$/) });
    expect(Number(refusedA.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const refusedB = await untilRefused(() => k.call('POST', '/pubsub/topic/orders', auth('rated'), { data: 'x' }));
    expect(json(refusedB)).toEqual({ is_ok: false, cid: refusedB.headers['x-svc-cid'], details: expect.stringMatching(/publishes_per_second/), status: '429 Too Many Requests' });
    expect(refusedB.headers['retry-after']).toBeDefined();
    // A service's publish fails with the refusal's message (the sandbox boundary carries no status for it: see the report).
    let fromService: Record<string, unknown> = {};
    for (let i = 0; i < 20 && fromService.error === undefined; i++) fromService = await shop('rated', { topic: '/orders', data: 'x' });
    expect(fromService).toMatchObject({ error: 'TooManyRequests', message: expect.stringMatching(/^Quota publishes_per_second reached/) });
    expect(throttled('rated')?.publishes_per_second).toBeGreaterThanOrEqual(3);
    expect(throttled('acme')?.publishes_per_second).toBe(0);
    for (let i = 0; i < 10; i++) expect((await publishA('acme', 'events', i)).statusCode).toBe(200);
  });

  it('pubsub_bytes: a tenant cannot publish past it while another still can; delivering its messages makes room', async () => {
    expect((await k.call('POST', '/svc/pubsub/subscribe/topic/orders', auth('small'))).statusCode).toBe(200);
    const accepted: number[] = [];
    const refused = await untilRefused(async () => {
      const res = await publishA('small', 'orders', '0123456789');
      if (res.statusCode === 200) accepted.push(1);
      return res;
    });
    expect(accepted).toHaveLength(4);
    expect(json(refused)).toEqual({ result: 'Error', cid: refused.headers['x-svc-cid'], details: expect.stringMatching(/^Quota pubsub_bytes reached: .*hold 40 bytes of message data, of 40; this message has 10$/) });
    expect(throttled('small')?.pubsub_bytes).toBe(1);
    const refusedB = await k.call('POST', '/pubsub/topic/events', auth('small'), { data: 'y' });
    expect(refusedB.statusCode).toBe(429);
    expect(json(refusedB)).toMatchObject({ is_ok: false, cid: refusedB.headers['x-svc-cid'] });
    expect(await shop('small', { topic: '/orders', data: 'z' })).toMatchObject({ error: 'TooManyRequests', message: expect.stringMatching(/^Quota pubsub_bytes reached/) });
    // Another tenant publishes as much as it likes.
    for (let i = 0; i < 10; i++) expect((await publishA('globex', 'events', 'x'.repeat(100))).statusCode).toBe(200);
    expect(await getA('small', 'orders')).toHaveLength(4);
    // Delivered messages are deleted once the answer is written (on PostgreSQL in a transaction of their own, just after).
    let after = await publishA('small', 'orders', '0123456789');
    for (let i = 0; i < 40 && after.statusCode === 429; i++) {
      await new Promise((r) => setTimeout(r, 50));
      after = await publishA('small', 'orders', '0123456789');
    }
    expect(after.statusCode, after.body).toBe(200);
  });
});

/** Calls until one answer is 429, and returns it (a sliding second on a busy machine may let a few more through). */
async function untilRefused(call: () => Promise<LightMyRequestResponse>, max = 20): Promise<LightMyRequestResponse> {
  for (let i = 0; i < max; i++) {
    const res = await call();
    if (res.statusCode === 429) return res;
    expect(res.statusCode, res.body).toBe(200);
  }
  throw new Error(`no call of ${max} was refused`);
}
