import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MqttClient } from 'mqtt';
import { startObserved, parseExposition, sampleValue, type ObservedKernel } from '../../observe/support.ts';
import { BROKER_URL, bareClient, closedPortUrl, collector, uniquePrefix } from './support.ts';

const PREFIX = uniquePrefix();
const NOWHERE = await closedPortUrl();

const CONFIG = `
mqtt_connection:
  - { name: sensors, url: '${BROKER_URL}', ready_check: true }
  - { name: v5, url: '${BROKER_URL}', protocol_version: 5, max_message_bytes: 2048 }
  - { name: private, url: '${BROKER_URL}', allowed_services: [other] }
  - { name: down, url: '${NOWHERE}', publish_timeout_ms: 300, reconnect: { min_ms: 100, max_ms: 200 } }
  - { name: down-slow, url: '${NOWHERE}', reconnect: { min_ms: 100, max_ms: 200 } }
channel_rest:
  - { name: pub, url_path: /pub, service: pub, method: POST, data_format: json, security: none }
  - { name: short, url_path: /short, service: short, method: POST, data_format: json, security: none }
`;

/** Publishes what the payload says and answers ok, or the error a service would see. */
const PUB = `import { mqtt, service } from 'svc/sdk';
export default service({
  async POST(ctx) {
    const { connection, topic, message, options } = ctx.payload;
    try {
      await mqtt(connection).publish(topic, message, options);
      return { ok: true };
    } catch (e) {
      return { error: { kind: e.kind ?? e.name, status: e.status, message: String(e.message) } };
    }
  },
});
`;

/** The same, with a time limit below the connection's publish_timeout_ms (5 s). */
const SHORT = PUB.replace('export default service({', 'export default service({\n  limits: { timeoutMs: 700 },');

let k: ObservedKernel;
const clients: MqttClient[] = [];

beforeAll(async () => {
  k = await startObserved({ config: CONFIG, services: { 'pub.ts': PUB, 'short.ts': SHORT } });
});
afterAll(async () => {
  await k?.close();
  // Retained messages are cleared with an empty retained message.
  const cleaner = await bareClient();
  await cleaner.publishAsync(`${PREFIX}/retained`, '', { retain: true, qos: 1 });
  await Promise.all([...clients, cleaner].map((c) => c.endAsync()));
});

async function publish(body: Record<string, unknown>): Promise<{ ok?: true; error?: { kind: string; status: number; message: string } }> {
  const res = await k.app.inject({ method: 'POST', url: '/pub', payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('mqtt.publish', () => {
  it('publishes with QoS 0, 1 and 2; objects as JSON, strings as they are', async () => {
    const sub = await collector(`${PREFIX}/q/#`);
    clients.push(sub.client);
    for (const qos of [0, 1, 2]) expect(await publish({ connection: 'sensors', topic: `${PREFIX}/q/${qos}`, message: { qos }, options: { qos } })).toEqual({ ok: true });
    expect(await publish({ connection: 'sensors', topic: `${PREFIX}/q/text`, message: 'plain' })).toEqual({ ok: true });
    await expect.poll(() => sub.received.length).toBe(4);
    expect(sub.received.map((m) => [m.topic, m.text, m.packet.qos]).sort()).toEqual([
      [`${PREFIX}/q/0`, '{"qos":0}', 0],
      [`${PREFIX}/q/1`, '{"qos":1}', 1],
      [`${PREFIX}/q/2`, '{"qos":2}', 2],
      [`${PREFIX}/q/text`, 'plain', 1],
    ]);
  });

  it('retains a message for a subscriber that comes later', async () => {
    expect(await publish({ connection: 'sensors', topic: `${PREFIX}/retained`, message: { last: 1 }, options: { retain: true } })).toEqual({ ok: true });
    const late = await collector(`${PREFIX}/retained`);
    clients.push(late.client);
    await expect.poll(() => late.received.length).toBe(1);
    expect(late.received[0]).toMatchObject({ text: '{"last":1}', packet: { retain: true } });
  });

  it('sends MQTT 5 properties on a protocol 5 connection, and refuses them on 3.1.1', async () => {
    const sub = await collector(`${PREFIX}/props`, { protocolVersion: 5 });
    clients.push(sub.client);
    const properties = { contentType: 'application/json', correlationData: 'c-1', responseTopic: `${PREFIX}/reply`, userProperties: { site: 'north' }, messageExpiryInterval: 60 };
    expect(await publish({ connection: 'v5', topic: `${PREFIX}/props`, message: { t: 1 }, options: { properties } })).toEqual({ ok: true });
    await expect.poll(() => sub.received.length).toBe(1);
    expect(sub.received[0]!.packet.properties).toMatchObject({ contentType: 'application/json', responseTopic: `${PREFIX}/reply`, userProperties: { site: 'north' } });
    expect(Buffer.from(sub.received[0]!.packet.properties!.correlationData!).toString()).toBe('c-1');
    expect((await publish({ connection: 'sensors', topic: `${PREFIX}/props`, message: 1, options: { properties } })).error).toMatchObject({ kind: 'BadRequest', status: 400 });
  });

  it('refuses wildcards in a topic, an unknown connection (NotFound) and a service not allowed (Forbidden)', async () => {
    expect((await publish({ connection: 'sensors', topic: `${PREFIX}/+/x`, message: 1 })).error).toMatchObject({ kind: 'BadRequest', status: 400, message: expect.stringMatching(/wildcards/) });
    expect((await publish({ connection: 'sensors', topic: `${PREFIX}/#`, message: 1 })).error).toMatchObject({ kind: 'BadRequest', message: expect.stringMatching(/wildcards/) });
    expect((await publish({ connection: 'v5', topic: `${PREFIX}/big`, message: 'é'.repeat(1025) })).error).toMatchObject({ kind: 'BadRequest', message: "Message of 2050 bytes is larger than connection 'v5' takes (max_message_bytes 2048)" });
    expect((await publish({ connection: 'nope', topic: `${PREFIX}/x`, message: 1 })).error).toMatchObject({ kind: 'NotFound', status: 404 });
    expect((await publish({ connection: 'private', topic: `${PREFIX}/x`, message: 1 })).error).toMatchObject({ kind: 'Forbidden', status: 403 });
  });

  it('answers ServiceUnavailable after publish_timeout_ms when the broker is down, and the server stays up', async () => {
    const started = performance.now();
    expect((await publish({ connection: 'down', topic: `${PREFIX}/x`, message: 1 })).error).toMatchObject({ kind: 'ServiceUnavailable', status: 503 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(await publish({ connection: 'sensors', topic: `${PREFIX}/still`, message: 1 })).toEqual({ ok: true });
  });

  it("ends the wait before the calling service's time limit, so the service catches ServiceUnavailable", async () => {
    // publish_timeout_ms is 5 s, the service's limit 700 ms: waiting it out ended the call with SERVICE_TIMEOUT.
    const started = performance.now();
    const res = await k.app.inject({ method: 'POST', url: '/short', payload: { connection: 'down-slow', topic: `${PREFIX}/x`, message: 1 } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().error).toMatchObject({ kind: 'ServiceUnavailable', status: 503, message: expect.stringMatching(/^MQTT broker not reachable before the calling service's time limit \(\d+ ms left\)$/) });
    expect(performance.now() - started).toBeGreaterThanOrEqual(450);
  });

  it('reports connections in /ready and counts publishes in /metrics', async () => {
    const ready = await (await fetch(`${k.admin}/ready`)).json();
    expect(ready.connections).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'mqtt', name: 'sensors', state: 'up', ready_check: true }), expect.objectContaining({ kind: 'mqtt', name: 'down', state: expect.stringMatching(/down|connecting/) })]));
    const samples = parseExposition(await (await fetch(`${k.admin}/metrics`)).text());
    expect(sampleValue(samples, 'svc_connector_up', { kind: 'mqtt', connection: 'sensors' })).toBe(1);
    expect(sampleValue(samples, 'svc_connector_up', { kind: 'mqtt', connection: 'down' })).toBe(0);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'mqtt', connection: 'sensors', operation: 'publish', outcome: 'ok' })).toBe(6);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'mqtt', connection: 'down', operation: 'publish', outcome: 'error' })).toBe(1);
  });
});
