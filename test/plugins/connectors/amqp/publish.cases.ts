import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../admin/api/support.ts';
import { parseExposition, sampleValue, startObserved, type ObservedKernel } from '../../observe/support.ts';
import { refusedPort } from '../../../helpers/refused-port.ts';
import { Bare, BROKER, suffix } from './support.ts';

/** Publishing from services with confirms, refusals, a broker that is down; /ready, /metrics and the admin API. */
const OUT = `svc-amqp-out-${suffix}`;
const PUB = `import { service } from 'svc/sdk';
import { amqp } from 'svc/sdk';
export default service({
  async handle(ctx) {
    const { connection, exchange, routingKey, message, options } = ctx.payload;
    const started = Date.now();
    try {
      await amqp(connection).publish(exchange, routingKey, message, options);
      return { ok: true };
    } catch (e) {
      return { error: e.name, status: e.status, message: e.message, ms: Date.now() - started };
    }
  },
});
`;

/** The same, with a time limit below the connection's publish_timeout_ms. */
const SHORT = PUB.replace('export default service({', 'export default service({\n  limits: { timeoutMs: 700 },');

const config = (deadPort: number) => `
channel_rest:
  - { name: pub, url_path: /pub, service: pub, security: none }
  - { name: other, url_path: /other, service: other, security: none }
  - { name: short, url_path: /short, service: short, security: none }
amqp_connection:
  - { name: main, url: "${BROKER}", allowed_services: [pub], ready_check: true }
  - { name: down, host: 127.0.0.1, port: ${deadPort}, publish_timeout_ms: 300, reconnect: { min_ms: 50, max_ms: 200 } }
  - { name: down-slow, host: 127.0.0.1, port: ${deadPort}, reconnect: { min_ms: 50, max_ms: 200 } }
`;

let k: ObservedKernel;
const bare = new Bare();

beforeAll(async () => {
  await bare.open();
  await bare.queue(OUT);
  k = await startObserved({ config: config(await refusedPort()), services: { 'pub.ts': PUB, 'other.ts': PUB, 'short.ts': SHORT } });
});

afterAll(async () => {
  await k?.close();
  await bare.close();
});

async function publish(body: Record<string, unknown>, path = '/pub'): Promise<Record<string, unknown>> {
  const res = await fetch(`${k.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ connection: 'main', exchange: '', routingKey: OUT, ...body }) });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

describe('amqp(name).publish', () => {
  it('resolves once confirmed; the message is on the queue, JSON with its properties and headers', async () => {
    expect(await publish({ message: { id: 1, items: ['pen'] }, options: { headers: { 'x-tenant': 'acme', n: 2, flag: true }, correlationId: 'c-9', messageId: 'm-9', type: 'order.created' } })).toEqual({ ok: true });
    const got = await bare.next(OUT);
    expect(JSON.parse(got.content.toString())).toEqual({ id: 1, items: ['pen'] });
    expect(got.properties).toMatchObject({ contentType: 'application/json', deliveryMode: 2, correlationId: 'c-9', messageId: 'm-9', type: 'order.created', headers: { 'x-tenant': 'acme', n: 2, flag: true } });
  });

  it('sends a string as text, and not persistent when asked', async () => {
    expect(await publish({ message: 'plain words', options: { persistent: false } })).toEqual({ ok: true });
    const got = await bare.next(OUT);
    expect(got.content.toString()).toBe('plain words');
    expect(got.properties).toMatchObject({ contentType: 'text/plain', deliveryMode: 1 });
  });

  it('refuses an unknown connection (NotFound), a service not allowed (Forbidden), an exchange that does not exist (NotFound)', async () => {
    expect(await publish({ connection: 'nope', message: 1 })).toMatchObject({ error: 'NotFound', status: 404 });
    expect(await publish({ message: 1 }, '/other')).toMatchObject({ error: 'Forbidden', status: 403 });
    expect(await publish({ exchange: `no-such-${suffix}`, message: 1 })).toMatchObject({ error: 'NotFound', status: 404, message: expect.stringContaining('no exchange') });
    // The connection is still usable after the broker closed the confirm channel.
    expect(await publish({ message: 'after' })).toEqual({ ok: true });
    expect((await bare.next(OUT)).content.toString()).toBe('after');
  });

  it('answers ServiceUnavailable after publish_timeout_ms when the broker is down; the server stays up', async () => {
    const r = await publish({ connection: 'down', message: 1 });
    expect(r).toMatchObject({ error: 'ServiceUnavailable', status: 503, message: expect.stringContaining('connection refused') });
    expect(r.ms as number).toBeGreaterThanOrEqual(250);
    expect(await publish({ message: 'still here' })).toEqual({ ok: true });
    await bare.next(OUT);
  });

  it("ends the wait before the calling service's time limit, so the service catches ServiceUnavailable", async () => {
    // publish_timeout_ms is 10 s, the service's limit 700 ms: waiting it out ended the call with SERVICE_TIMEOUT (a 500).
    const r = await publish({ connection: 'down-slow', message: 1 }, '/short');
    expect(r).toMatchObject({ error: 'ServiceUnavailable', status: 503, message: expect.stringMatching(/^AMQP connection 'down-slow' is (down \(connection refused\)|connecting): no channel before the calling service's time limit \(\d+ ms left\)$/) });
    expect(r.ms as number).toBeGreaterThanOrEqual(450);
    expect(r.ms as number).toBeLessThan(700);
  });
});

describe('health, metrics, admin API', () => {
  it('/ready lists the connections; a down one with ready_check makes it 503', async () => {
    const body = (await (await fetch(`${k.admin}/ready`)).json()) as { connections: unknown[] };
    expect(body.connections).toEqual(
      expect.arrayContaining([
        { kind: 'amqp', name: 'main', role: 'connection', state: 'up', ready_check: true },
        { kind: 'amqp', name: 'down', role: 'connection', state: 'down', ready_check: false, reason: 'connection refused' },
      ]),
    );
    expect(JSON.stringify(body)).not.toContain('guest');
  });

  it('/metrics counts publishes and says which connection is up', async () => {
    const res = await fetch(`${k.admin}/metrics`, { headers: { authorization: `Basic ${Buffer.from('admin:admin-test-password').toString('base64')}` } });
    const samples = parseExposition(await res.text());
    expect(sampleValue(samples, 'svc_connector_up', { kind: 'amqp', connection: 'main' })).toBe(1);
    expect(sampleValue(samples, 'svc_connector_up', { kind: 'amqp', connection: 'down' })).toBe(0);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'amqp', connection: 'main', operation: 'publish', outcome: 'ok' })).toBeGreaterThanOrEqual(4);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'amqp', connection: 'main', operation: 'publish', outcome: 'error' })).toBe(1);
  });

  it('the admin API lists both sections, without the url', async () => {
    const admin = new AdminClient(k.admin);
    expect((await admin.login()).status).toBe(200);
    const conns = await admin.get('/admin/api/resources/amqp_connection');
    expect(conns.status).toBe(200);
    expect(conns.body.items.map((i: { name: string }) => i.name)).toEqual(['main', 'down', 'down-slow']);
    expect(JSON.stringify(conns.body)).not.toContain('guest:guest');
    const channels = await admin.get('/admin/api/resources/channel_amqp');
    expect(channels.status).toBe(200);
    expect(channels.body.items).toEqual([]);
  });
});
