import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { TenantLedger } from '../../../../kernel/tenants/ledger.ts';
import type { TenantConfig } from '../../../../sdk/plugin/config.ts';
import { msg, openEngine, TENANT_RESOURCES as RESOURCES, type EngineFixture } from './helpers.ts';

/**
 * Tenants' pub/sub quotas in the memory strategy (one node; memory holds every live message):
 * publishes_per_second from the kernel's ledger, pubsub_bytes counted from what memory holds, a
 * message once however many queues hold it. No isolates here: this runs on every Node line.
 */

const ALL = { maxMessages: Infinity, maxBytes: Infinity };
const tenant = (name: string, quotas: TenantConfig['quotas'] = {}): TenantConfig => ({ name, processes: 0, weight: 1, quotas });

let fx: EngineFixture;
afterEach(async () => {
  await fx?.close();
});

async function open(quotas: Record<string, TenantConfig['quotas']>, clock = new ManualClock(1_000_000)): Promise<TenantLedger> {
  const ledger = new TenantLedger(clock);
  ledger.configure(Object.entries(quotas).map(([name, q]) => tenant(name, q)));
  fx = await openEngine(RESOURCES, undefined, clock, ledger);
  return ledger;
}

const outcome = (p: Promise<unknown>) => p.then(() => 'ok', (err: { code?: string }) => err.code ?? String(err));
/** The error a publish was refused with (the test fails if it was accepted). */
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => expect.fail('the publish was accepted'),
    (err: unknown) => err as { code: string; status: number; details: string; headers: Record<string, string> },
  );
const throttled = (ledger: TenantLedger, name: string) => ledger.figures().find((f) => f.tenant === name)?.throttled;

describe('pubsub_bytes (memory strategy)', () => {
  it('counts a message once however many queues hold it; past the quota 429 TENANT_QUOTA, counted; other tenants and the platform go on', async () => {
    const ledger = await open({ acme: { pubsub_bytes: 10 }, globex: { pubsub_bytes: 10 } });
    await fx.engine.subscribe('acme/a', 'acme/orders');
    await fx.engine.subscribe('acme/b', 'acme/orders');
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'aaaa')))).toBe('ok');
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'bbbb', { hasGd: true })))).toBe('ok');
    const refused = await refusal(fx.engine.publish(msg('acme/orders', 'cccc')));
    expect(refused).toMatchObject({ code: 'TENANT_QUOTA', status: 429, headers: { 'Retry-After': '1' } });
    expect(refused.details).toMatch(/^Quota pubsub_bytes reached: the tenant's topics and queues hold 8 bytes of message data, of 10; this message has 4$/);
    expect(throttled(ledger, 'acme')?.pubsub_bytes).toBe(1);
    // A message that still fits is taken.
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'dd')))).toBe('ok');
    expect(await outcome(fx.engine.publish(msg('globex/orders', 'eeeeeeeeee')))).toBe('ok');
    expect(await outcome(fx.engine.publish(msg('/orders', 'x'.repeat(1000))))).toBe('ok');
    expect(throttled(ledger, 'globex')?.pubsub_bytes).toBe(0);
  });

  it('frees the bytes when the last queue holding a message has it delivered, not before; a failed delivery keeps them', async () => {
    await open({ acme: { pubsub_bytes: 8 } });
    const a = (await fx.engine.subscribe('acme/a', 'acme/orders')).subKey;
    const b = (await fx.engine.subscribe('acme/b', 'acme/orders')).subKey;
    await fx.engine.publish(msg('acme/orders', '12345678', { hasGd: true }));
    fx.engine.take([a], { order: 'lifo', ...ALL }).ack();
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'x')))).toBe('TENANT_QUOTA');
    fx.engine.take([b], { order: 'lifo', ...ALL }).nack();
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'x')))).toBe('TENANT_QUOTA');
    fx.engine.take([b], { order: 'lifo', ...ALL }).ack();
    expect(await outcome(fx.engine.publish(msg('acme/orders', '12345678')))).toBe('ok');
  });

  it('frees the bytes of expired messages, of unsubscribed queues and of retained messages of a removed topic', async () => {
    await open({ acme: { pubsub_bytes: 4 } });
    await fx.engine.publish(msg('acme/orders', 'ab', { expiration: 1 }));
    await fx.engine.publish(msg('acme/orders', 'cd'));
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'e')))).toBe('TENANT_QUOTA');
    fx.clock.advance(1_001);
    fx.engine.sweep();
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'ef')))).toBe('ok');
    // Retained 'cd' and 'ef' move to the first subscriber; unsubscribing deletes them.
    await fx.engine.subscribe('acme/a', 'acme/orders');
    await fx.engine.idle();
    await fx.engine.unsubscribe('acme/a', 'acme/orders');
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'gh')))).toBe('ok');
    await fx.engine.applyConfig({ ...RESOURCES, topics: RESOURCES.topics.filter((t) => t.name !== 'acme/orders') });
    await fx.engine.applyConfig(RESOURCES);
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'ijkl')))).toBe('ok');
  });

  it('counts the stored messages again after a restart', async () => {
    const clock = new ManualClock(1_000_000);
    const ledger = await open({ acme: { pubsub_bytes: 6 } }, clock);
    await fx.engine.subscribe('acme/a', 'acme/orders');
    await fx.engine.publish(msg('acme/orders', 'abcd', { hasGd: true }));
    await fx.engine.publish(msg('acme/orders', 'zz', { hasGd: false }));
    await fx.engine.idle();
    fx = await fx.reopen();
    // The GD message came back; the other one lived in memory only.
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'zzz')))).toBe('TENANT_QUOTA');
    expect(await outcome(fx.engine.publish(msg('acme/orders', 'zz')))).toBe('ok');
    expect(throttled(ledger, 'acme')?.pubsub_bytes).toBe(1);
  });
});

describe('publishes_per_second (memory strategy)', () => {
  it("refuses a tenant's publishes past its rate with Retry-After, counted; the next second they pass; nobody else is held", async () => {
    const clock = new ManualClock(1_000_000);
    const ledger = await open({ acme: { publishes_per_second: 3 }, globex: {} }, clock);
    for (let i = 0; i < 3; i++) expect(await outcome(fx.engine.publish(msg('acme/orders', i)))).toBe('ok');
    const refused = await refusal(fx.engine.publish(msg('acme/orders', 3)));
    expect(refused).toMatchObject({ code: 'TENANT_QUOTA', headers: { 'Retry-After': '1' } });
    expect(refused.details).toMatch(/publishes_per_second/);
    for (let i = 0; i < 10; i++) {
      expect(await outcome(fx.engine.publish(msg('globex/orders', i)))).toBe('ok');
      expect(await outcome(fx.engine.publish(msg('/orders', i)))).toBe('ok');
    }
    expect(throttled(ledger, 'acme')?.publishes_per_second).toBe(1);
    clock.advance(1_000);
    expect(await outcome(fx.engine.publish(msg('acme/orders', 4)))).toBe('ok');
  });

  it('an unknown topic costs no publish of the quota', async () => {
    await open({ acme: { publishes_per_second: 1 } });
    expect(await outcome(fx.engine.publish(msg('acme/nope', 1)))).toBe('NOT_FOUND');
    expect(await outcome(fx.engine.publish(msg('acme/orders', 1)))).toBe('ok');
  });
});
