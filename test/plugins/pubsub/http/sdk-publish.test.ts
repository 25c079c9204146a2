import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, PUBSUB_CONFIG, json, startPubSub, type PubSubKernel } from './helpers.ts';

/** Services publish through the SDK's publish(); the host call behind it checks grants and arguments. */

const INTERLEAVED = `import { service, publish, hmacSha256Hex } from 'svc/sdk';
export default service({
  async handle(ctx) {
    // Host calls of many requests interleave in one isolate: each must stay attributed to its own.
    await hmacSha256Hex('k', String(ctx.input.n));
    const { msgId } = await publish('/orders/paid', { n: ctx.input.n });
    return { msgId };
  },
});`;

const BILLING = `import { service, publish } from 'svc/sdk';
export default service({
  async handle(ctx) {
    const { topic, data, options } = ctx.input;
    try {
      const { msgId } = await publish(topic, data, options);
      return { msgId };
    } catch (e) {
      return { error: e.name, message: e.message };
    }
  },
});`;

let k: PubSubKernel;
const CONFIG = `${PUBSUB_CONFIG}
  - { name: ep.billing, services: [billing, interleaved], pub: ['/orders/paid'] }
channel_rest:
  - { name: interleaved, url_path: /interleaved, service: interleaved, security: none }
  - { name: billing, url_path: /billing, service: billing, security: none }
  - { name: other, url_path: /other, service: other, security: none }
`;

beforeAll(async () => {
  k = await startPubSub({ config: CONFIG, services: { 'billing.js': BILLING, 'other.js': BILLING, 'interleaved.js': INTERLEAVED } });
  await k.call('POST', '/svc/pubsub/subscribe/topic/orders/paid', ALICE);
});
afterAll(async () => {
  await k?.close();
});

const publishVia = async (url: string, body: unknown) => json(await k.call('POST', url, undefined, body)) as Record<string, string>;

describe('publish() from a service', () => {
  it('publishes to a granted topic; GD by default; correl_id defaults to the CID of the request', async () => {
    const res = await k.call('POST', '/billing', undefined, { topic: '/orders/paid', data: { invoice: 7 }, options: { priority: 8, extClientId: 'billing' } });
    const reply = json(res) as { msgId: string };
    expect(reply.msgId).toMatch(/^svcpsm/);
    const [m] = json(await k.call('PATCH', '/svc/pubsub/topic/orders/paid', ALICE)) as Array<Record<string, unknown>>;
    expect(m).toMatchObject({ data: { invoice: 7 }, priority: 8, has_gd: true, correl_id: res.headers['x-svc-cid'], ext_client_id: 'billing', msg_id: reply.msgId });
  });

  it('attributes each publish to its own request when many run at once in one isolate', async () => {
    await k.call('PATCH', '/svc/pubsub/topic/orders/paid', ALICE);
    const responses = await Promise.all(Array.from({ length: 24 }, (_, n) => k.call('POST', '/interleaved', undefined, { n })));
    const cidOf = new Map(responses.map((r, n) => [n, r.headers['x-svc-cid']]));
    const messages = json(await k.call('PATCH', '/svc/pubsub/topic/orders/paid', ALICE)) as Array<{ data: { n: number }; correl_id: string }>;
    expect(messages).toHaveLength(24);
    for (const m of messages) expect(m.correl_id).toBe(cidOf.get(m.data.n));
  });

  it('refuses topics config does not grant the service, and services config does not name', async () => {
    expect(await publishVia('/billing', { topic: '/orders/new', data: 'x' })).toMatchObject({ error: 'Forbidden' });
    expect(await publishVia('/other', { topic: '/orders/paid', data: 'x' })).toMatchObject({ error: 'Forbidden' });
    expect(await publishVia('/billing', { topic: 'not a topic', data: 'x' })).toMatchObject({ error: 'Forbidden' });
  });

  it('checks its arguments on the host', async () => {
    expect((await publishVia('/billing', { topic: '/orders/paid' })).message).toMatch(/invalid arguments for pubsub.publish: data/);
    expect((await publishVia('/billing', { topic: '/orders/paid', data: 'x', options: { priority: 10 } })).message).toMatch(/opts.priority/);
  });

  it('an unhandled publish failure is the service failing, with the CID', async () => {
    await k.writeService('strict.js', `import { service, publish } from 'svc/sdk';\nexport default service({ async handle() { await publish('/orders/new', 'x'); return {}; } });`);
    await k.writeConfig(`${CONFIG}  - { name: strict, url_path: /strict, service: strict, security: none }\n`);
    const res = await k.call('POST', '/strict', undefined, {});
    expect(res.statusCode).toBe(403);
    expect(json(res)).toMatchObject({ result: 'Error', cid: res.headers['x-svc-cid'] });
  });
});
