import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { control, errorsOf, until } from '../../delivery/use-queue/support.ts';
import { logLine, messagesOf, nowSeconds, post, sampleCode, stripeSignature, type LogLine } from './support.ts';

/** services/webhook-stripe.ts as shipped, on a queued channel. */

const SECRET = 'whsec_9c41b7d2e0aa';

const config = (secretValue: string | null, delivery = '{}') => `
plugins:
  use-queue: { config: { stop_wait_ms: 0 } }
secrets:
  - { name: stripe-webhook, ${secretValue === null ? '' : `value: "${secretValue}", `}services: [webhook-stripe] }
channel_rest:
  - { name: stripe, url_path: /webhooks/stripe, service: webhook-stripe, method: POST, data_format: json, security: none, use_queue: true, delivery: ${delivery} }
`;

let k: TestKernel;
let logs: LogLine[];
afterEach(async () => k?.close());

async function start(opts: { secret?: string | null; delivery?: string; clock?: ManualClock } = {}): Promise<void> {
  logs = [];
  k = await startKernel({ config: config(opts.secret === undefined ? SECRET : opts.secret, opts.delivery), services: { 'webhook-stripe.ts': sampleCode('webhook-stripe') }, clock: opts.clock, logs });
}

const eventBody = (id: string, type: string, object: Record<string, unknown>) => JSON.stringify({ id, type, data: { object } });
const send = (body: string, signature: string) => post(k, '/webhooks/stripe', body, { 'stripe-signature': signature });

describe('Stripe webhook from the queue', () => {
  it('answers 200 {cid} on arrival, then verifies and dispatches on the type field', async () => {
    await start();
    const bodies = [
      eventBody('evt_1', 'payment_intent.succeeded', { id: 'pi_1', amount: 2000, currency: 'eur' }),
      eventBody('evt_2', 'charge.refunded', { id: 'ch_1', amount_refunded: 500, currency: 'usd' }),
      eventBody('evt_3', 'customer.created', { id: 'cus_1' }),
    ];
    for (const body of bodies) {
      const res = await send(body, stripeSignature(SECRET, body, nowSeconds()));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ cid: res.headers['x-svc-cid'] });
    }
    await until(k, (r) => r.length === 0);
    expect(messagesOf(logs, 'webhook-stripe').sort()).toEqual([
      'Stripe charge ch_1 refunded: 500 usd (event evt_2)',
      'Stripe event customer.created ignored (event evt_3)',
      'Stripe payment pi_1 succeeded: 2000 eur (event evt_1)',
    ]);
  });

  it.each<[string, (body: string) => string, string]>([
    ['another secret', (body) => stripeSignature('whsec_other', body, nowSeconds()), 'Invalid signature'],
    ['a signature over another body', (body) => stripeSignature(SECRET, body.replace('2000', '1'), nowSeconds()), 'Invalid signature'],
    ['a malformed header', () => 'garbage', 'Missing signature'],
  ])('dead-letters an event with %s after exactly one attempt', async (_label, signature, message) => {
    await start();
    const body = eventBody('evt_1', 'payment_intent.succeeded', { id: 'pi_1', amount: 2000, currency: 'eur' });
    expect((await send(body, signature(body))).statusCode).toBe(200);
    const [dead] = await until(k, (r) => r[0]?.state === 'dead');
    expect(dead!.attempts).toBe(1);
    expect(errorsOf(dead!)).toEqual([expect.objectContaining({ attempt: 1, kind: 'Unauthorized', message })]);
    expect(messagesOf(logs, 'webhook-stripe')).toEqual([]);
  });
});

describe('the tolerance is checked against the arrival time (ctx.delivery.firstReceivedAt)', () => {
  // The kernel's clock says the events arrived ten minutes ago; the sandbox runs them now.
  const arrivedMs = () => Date.now() - 10 * 60_000;

  it('an event fresh on arrival still verifies when an operator replays it ten minutes later', async () => {
    const clock = new ManualClock(arrivedMs());
    // No secret yet and one attempt: the event is dead-lettered with ServiceUnavailable.
    await start({ secret: null, delivery: '{ max_attempts: 1 }', clock });
    const body = eventBody('evt_late', 'payment_intent.succeeded', { id: 'pi_9', amount: 100, currency: 'eur' });
    const signedAt = Math.floor(clock.now() / 1000);
    expect((await send(body, stripeSignature(SECRET, body, signedAt))).statusCode).toBe(200);
    const [dead] = await until(k, (r) => r[0]?.state === 'dead');
    expect(dead!.first_received_at).toBe(clock.now());
    expect(errorsOf(dead!)[0]).toMatchObject({ kind: 'ServiceUnavailable' });
    // Well past 300 s after the signature by the sandbox's own time.
    expect(nowSeconds() - signedAt).toBeGreaterThan(300);

    await control(k, 'secrets.set', { name: 'stripe-webhook', value: SECRET, configValue: null });
    expect(await control(k, 'queue.replay', { id: dead!.id })).toEqual({ replayed: 1, ids: [dead!.id] });
    await until(k, (r) => r.length === 0);
    expect((await logLine(logs, 'webhook-stripe', /^Stripe payment/)).msg).toBe('Stripe payment pi_9 succeeded: 100 eur (event evt_late)');
  });

  it('an event already stale on arrival is still refused', async () => {
    const clock = new ManualClock(arrivedMs());
    await start({ clock });
    const arrived = Math.floor(clock.now() / 1000);
    for (const [id, t] of [['evt_past', arrived - 301], ['evt_future', arrived + 301], ['evt_inside', arrived - 290]] as const) {
      const body = eventBody(id, 'payment_intent.succeeded', { id: 'pi_1', amount: 1, currency: 'eur' });
      expect((await send(body, stripeSignature(SECRET, body, t))).statusCode).toBe(200);
    }
    const rows = await until(k, (r) => r.length === 2 && r.every((e) => e.state === 'dead'));
    expect(rows.map((e) => errorsOf(e).map((x) => `${x.kind}: ${x.message}`))).toEqual([
      ['Unauthorized: Signature timestamp outside the tolerance'],
      ['Unauthorized: Signature timestamp outside the tolerance'],
    ]);
    // The one signed 290 s before it arrived is within the tolerance.
    expect(messagesOf(logs, 'webhook-stripe')).toEqual(['Stripe payment pi_1 succeeded: 1 eur (event evt_inside)']);
  });
});
