import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type MqttClient } from 'mqtt';
import { startObserved, parseExposition, sampleValue, type ObservedKernel } from '../../observe/support.ts';
import { BROKER_URL, bareClient, collector, uniquePrefix } from './support.ts';

const P = uniquePrefix();
const ID = P.replace('/', '-');
const FAST = `url: '${BROKER_URL}', reconnect: { min_ms: 100, max_ms: 400 }`;
const RETRIES = 'delivery: { max_attempts: 3, base_delay_ms: 10, max_delay_ms: 20 }';

const CONFIG = `
mqtt_connection:
  - { name: out, url: '${BROKER_URL}' }
channel_mqtt:
  - { name: plant, client_id: ${ID}-plant, ${FAST}, topics: ['${P}/plant/+/temp', '${P}/alarm/#'], service: record, ${RETRIES}, ready_check: true }
  - { name: failing, client_id: ${ID}-failing, ${FAST}, topics: ['${P}/fail'], service: fail, ${RETRIES} }
  - { name: queued, client_id: ${ID}-queued, ${FAST}, topics: ['${P}/queued'], service: record, delivery: { use_queue: true } }
  - { name: v5, client_id: ${ID}-v5, ${FAST}, protocol_version: 5, qos: 2, topics: ['${P}/v5/#'], service: record }
  - { name: slow, client_id: ${ID}-slow, ${FAST}, topics: ['${P}/slow'], service: slow }
  - { name: long, client_id: ${ID}-long, ${FAST}, keepalive_s: 5, topics: ['${P}/long'], service: long }
`;

/** Publishes what it was given to <prefix>/results, for the test to read. */
const RECORD = `import { mqtt, service } from 'svc/sdk';
export default service({
  async POST(ctx) {
    await mqtt('out').publish('${P}/results', { source: ctx.delivery?.source, payload: ctx.payload, headers: ctx.headers, attempt: ctx.delivery?.attempt });
    return {};
  },
});
`;
const FAIL = `import { service } from 'svc/sdk';
export default service({ POST: async () => { throw new Error('always fails'); } });
`;
/** Slow on a first delivery (the connection is taken away meanwhile), quick on the redelivery. */
const SLOW = `import { mqtt, service } from 'svc/sdk';
export default service({
  async POST(ctx) {
    if (ctx.headers['mqtt-dup'] === 'false') { const end = Date.now() + 1500; while (Date.now() < end) {} }
    await mqtt('out').publish('${P}/results', { source: ctx.delivery?.source, payload: ctx.payload, headers: ctx.headers });
    return {};
  },
});
`;

/** Busy for longer than 1.5 x keepalive_s (7.5 s) on a first delivery. */
const LONG = SLOW.replace('1500', '8500').replace('export default service({', 'export default service({\n  limits: { timeoutMs: 20000 },');

type Result = { source: { kind: string; name: string }; payload: unknown; headers: Record<string, string>; attempt?: number };

let k: ObservedKernel;
let results: Awaited<ReturnType<typeof collector>>;
let sender: MqttClient;
const parsed = () => results.received.map((m) => JSON.parse(m.text) as Result);
const of = (channel: string) => parsed().filter((r) => r.source.name === channel);

beforeAll(async () => {
  results = await collector(`${P}/results`);
  sender = await bareClient({ protocolVersion: 5 });
  k = await startObserved({ config: CONFIG, services: { 'record.ts': RECORD, 'fail.ts': FAIL, 'slow.ts': SLOW, 'long.ts': LONG } });
  await until(() => k.kernel.api.connections().filter((c) => c.kind === 'mqtt' && c.state === 'up').length === 7);
});

async function until(ok: () => boolean): Promise<void> {
  for (const end = performance.now() + 10_000; !ok(); ) {
    if (performance.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
afterAll(async () => {
  await k?.close();
  // The channels' persistent sessions go with a clean connect under their client ids.
  for (const name of ['plant', 'failing', 'queued', 'v5', 'slow', 'long']) await (await bareClient({ clientId: `${ID}-${name}`, clean: true })).endAsync();
  await Promise.all([results?.client.endAsync(), sender?.endAsync()]);
});

const deadLetters = async (channel: string) => (await k.kernel.runControl('queue.list', { channel: `mqtt:${channel}`, state: 'dead', limit: 10 })) as Array<{ id: number; attempts: number; lastError: { kind: string; message: string } }>;

describe('channel_mqtt', () => {
  it('runs the service for messages matching + and # filters, with the decoded payload and headers', async () => {
    await sender.publishAsync(`${P}/plant/7/temp`, JSON.stringify({ c: 21.5 }), { qos: 1 });
    await sender.publishAsync(`${P}/alarm/a/b`, JSON.stringify({ level: 'high' }), { qos: 1, retain: false });
    await sender.publishAsync(`${P}/plant/7/humidity`, JSON.stringify({ no: 1 }), { qos: 1 });
    await expect.poll(() => of('plant').length).toBe(2);
    const [temp, alarm] = of('plant').sort((a, b) => a.headers['mqtt-topic']!.localeCompare(b.headers['mqtt-topic']!)).reverse();
    expect(temp).toMatchObject({ source: { kind: 'mqtt', name: 'plant' }, payload: { c: 21.5 }, headers: { 'mqtt-topic': `${P}/plant/7/temp`, 'mqtt-qos': '1', 'mqtt-retain': 'false', 'mqtt-dup': 'false' } });
    expect(alarm).toMatchObject({ payload: { level: 'high' }, headers: { 'mqtt-topic': `${P}/alarm/a/b` } });
  });

  it('gives MQTT 5 properties as headers, and takes QoS 2', async () => {
    await sender.publishAsync(`${P}/v5/x`, JSON.stringify({ v: 5 }), { qos: 2, properties: { contentType: 'application/json', correlationData: Buffer.from('abc'), responseTopic: `${P}/reply`, userProperties: { Site: 'north' } } });
    await expect.poll(() => of('v5').length).toBe(1);
    expect(of('v5')[0]).toMatchObject({ payload: { v: 5 }, headers: { 'mqtt-qos': '2', 'content-type': 'application/json', 'mqtt-correlation-data': Buffer.from('abc').toString('base64'), 'mqtt-response-topic': `${P}/reply`, site: 'north' } });
  });

  it('dead-letters a message that is not valid JSON, with the reason, and acknowledges it', async () => {
    await sender.publishAsync(`${P}/plant/1/temp`, '{not json', { qos: 1 });
    await expect.poll(async () => (await deadLetters('plant')).length, { timeout: 10_000 }).toBe(1);
    expect((await deadLetters('plant'))[0]).toMatchObject({ attempts: 0, lastError: { kind: 'MessageFormatError', message: expect.stringMatching(/JSON/) } });
  });

  it('retries a failing service, then dead-letters the message', async () => {
    await sender.publishAsync(`${P}/fail`, JSON.stringify({ n: 1 }), { qos: 1 });
    await expect.poll(async () => (await deadLetters('failing')).length, { timeout: 10_000 }).toBe(1);
    expect((await deadLetters('failing'))[0]).toMatchObject({ attempts: 3, lastError: { kind: 'Error', message: expect.stringMatching(/always fails/) } });
  });

  it('stores messages in the Use queue with use_queue, which runs the service', async () => {
    await sender.publishAsync(`${P}/queued`, JSON.stringify({ q: 1 }), { qos: 1 });
    await expect.poll(() => of('queued').length, { timeout: 10_000 }).toBe(1);
    expect(of('queued')[0]).toMatchObject({ payload: { q: 1 }, attempt: 1 });
  });

  it('redelivers a message whose connection was taken away while the service ran, and the channel wins its session back', async () => {
    await sender.publishAsync(`${P}/slow`, JSON.stringify({ s: 1 }), { qos: 1 });
    // The same client id connects: the broker drops the channel's connection, with the message unacknowledged.
    await new Promise((r) => setTimeout(r, 300));
    // It never acknowledges what the session hands it (set before any packet arrives), and does not reconnect.
    const thief = connect(BROKER_URL, { clientId: `${ID}-slow`, clean: false, reconnectPeriod: 0 });
    thief.handleMessage = () => {};
    thief.on('error', () => {});
    await expect.poll(() => parsed().filter((r) => r.source.name === 'slow' && r.headers['mqtt-dup'] === 'true').length, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    thief.end(true);
    const slow = k.kernel.api.connections().find((c) => c.name === 'slow')!;
    expect(slow.meter.reconnects).toBeGreaterThanOrEqual(1);
    await expect.poll(() => slow.state, { timeout: 5_000 }).toBe('up');
  });

  it('keeps the connection alive while a service runs longer than the keepalive allows', async () => {
    await sender.publishAsync(`${P}/long`, JSON.stringify({ l: 1 }), { qos: 1 });
    await expect.poll(() => of('long').length, { timeout: 15_000 }).toBe(1);
    expect(of('long')[0]!.headers['mqtt-dup']).toBe('false');
    const long = k.kernel.api.connections().find((c) => c.name === 'long')!;
    expect(long.meter.reconnects).toBe(0);
    // The service's record is written while it runs; the count only once its answer is in and the message acknowledged.
    await expect.poll(() => long.meter.counts.get('consume ok'), { timeout: 5_000 }).toBe(1);
    expect(long.meter.reconnects).toBe(0);
  }, 20_000);

  it('reports channels in /ready and counts consumed messages in /metrics', async () => {
    const ready = await (await fetch(`${k.admin}/ready`)).json();
    expect(ready.connections).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'mqtt', name: 'plant', role: 'channel', state: 'up', ready_check: true })]));
    const samples = parseExposition(await (await fetch(`${k.admin}/metrics`)).text());
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'mqtt', connection: 'plant', operation: 'consume', outcome: 'ok' })).toBe(2);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'mqtt', connection: 'plant', operation: 'consume', outcome: 'dead_letter' })).toBe(1);
    expect(sampleValue(samples, 'svc_connector_reconnects_total', { kind: 'mqtt', connection: 'slow' })).toBeGreaterThanOrEqual(1);
  });
});
