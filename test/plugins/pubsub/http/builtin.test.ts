import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../../../plugins/security/shared/secrets.ts';
import { basic, json, startPubSub, type PubSubKernel } from './helpers.ts';

/** Spec B, last paragraph: built-in test resources exist in every environment. */

let k: PubSubKernel;
let dir: string;
const USER = 'svc.pubsub.test.secdef';
const TEST = basic(USER, 'chosen-by-the-admin');

beforeAll(async () => {
  k = await startPubSub({ config: 'pubsub_topic: []' });
  dir = k.dir;
});
afterAll(async () => {
  await k?.close();
});

describe('built-in test resources', () => {
  it('the topic /svc/test/sample and the endpoint exist without any config', () => {
    expect(k.engine.hasTopic('/svc/test/sample')).toBe(true);
    const ep = k.engine.endpointBySecurity('svc.pubsub.test.secdef')!;
    expect(ep.name).toBe('svc.pubsub.test.endpoint');
    expect(ep.canPublish('/svc/test/sample')).toBe(true);
    expect(ep.canSubscribe('/svc/test/anything')).toBe(true);
    expect(ep.canPublish('/svc/test/a/b')).toBe(false);
    expect(ep.canSubscribe('/svc/other')).toBe(false);
  });

  it('its password is random per environment: nothing guessable works before it is set', async () => {
    for (const guess of [USER, '', 'password', 'svc']) {
      expect((await k.call('POST', '/svc/pubsub/topic/svc/test/sample', basic(USER, guess), { data: 'x' })).statusCode).toBe(401);
    }
    const row = await k.kernel.store.one<{ builtin: number }>('SELECT builtin FROM security_secret WHERE definition = ?', [USER]);
    expect(row?.builtin).toBeTruthy();
  });

  it('once its password is set (svc secdef set-password), both variants work on /svc/test/*', async () => {
    await k.kernel.runControl('secdef.set-password', { name: USER, hash: await hashSecret('chosen-by-the-admin'), configHash: null });
    const sub = await k.call('POST', '/svc/pubsub/subscribe/topic/svc/test/sample', TEST);
    expect(sub.statusCode).toBe(200);
    expect((await k.call('POST', '/svc/pubsub/topic/svc/test/sample', TEST, { data: 'via A' })).statusCode).toBe(200);
    expect((json(await k.call('PATCH', '/svc/pubsub/topic/svc/test/sample', TEST)) as Array<{ data: string }>).map((m) => m.data)).toEqual(['via A']);
    expect((await k.call('POST', '/pubsub/topic/svc/test/sample', TEST, { data: 'via B' })).statusCode).toBe(200);
    const got = json(await k.call('POST', '/pubsub/messages/get', TEST)) as { data: string };
    expect(got.data).toBe('via B');
    expect((await k.call('POST', '/svc/pubsub/topic/svc/test/a/b', TEST, { data: 'x' })).statusCode).toBe(403);
  });

  it('config may not redefine the built-in names', async () => {
    const bad = await k.writeConfig('pubsub_topic: [{ name: /svc/test/sample }]');
    expect(bad).toBe(false);
  });

  it('survive a restart, with the password that was set', async () => {
    await k.close();
    k = await startPubSub({ config: 'pubsub_topic: []', dir });
    const sub = json(await k.call('POST', '/svc/pubsub/subscribe/topic/svc/test/sample', TEST)) as Record<string, unknown>;
    expect(sub).not.toHaveProperty('queue_depth'); // the subscription made before the restart is still there
  });
});
