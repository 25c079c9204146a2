import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { Bare, BROKER, ECHO, suffix } from './support.ts';

/** Inbound channels against the real RabbitMQ: consume → service → ack, formats, dead letters, Use queue. */
const q = (name: string) => `svc-amqp-${name}-${suffix}`;
const REPLY = q('reply');
const FAILING = `import { service, BadRequest } from 'svc/sdk';
export default service({ handle(ctx) { if (ctx.payload?.permanent) throw new BadRequest('not this one'); throw new Error('boom ' + ctx.payload?.n); } });
`;

const config = () => `
amqp_connection:
  - { name: main, url: "${BROKER}", publish_timeout_ms: 5000 }
channel_amqp:
  - { name: json-in, connection: main, queue: ${q('json')}, declare: { durable: true }, service: echo }
  - { name: xml-in, connection: main, queue: ${q('xml')}, declare: { durable: true }, service: echo, data_format: xml }
  - { name: fail-in, connection: main, queue: ${q('fail')}, declare: { durable: true }, service: failing, delivery: { max_attempts: 3, base_delay_ms: 10, max_delay_ms: 20 } }
  - { name: queued-in, connection: main, queue: ${q('queued')}, declare: { durable: true }, service: echo, delivery: { use_queue: true } }
  - name: broker-dl
    connection: main
    queue: ${q('bdl')}
    declare: { durable: true, arguments: { x-dead-letter-exchange: ${q('dlx')} } }
    service: failing
    dead_letter: broker
    delivery: { max_attempts: 1 }
  - { name: existing-in, connection: main, queue: ${q('existing')}, service: echo }
  - { name: missing-in, connection: main, queue: ${q('missing')}, service: echo }
  - { name: bad-settings-in, connection: main, queue: ${q('existing')}, service: echo, json: { max_depth: deep } }
`;

let k: TestKernel;
const bare = new Bare();

beforeAll(async () => {
  await bare.open();
  await bare.queue(REPLY);
  await bare.queue(q('existing'));
  await bare.exchange(q('dlx'));
  await bare.queue(q('dlq'));
  await bare.ch.bindQueue(q('dlq'), q('dlx'), '');
  for (const n of ['json', 'xml', 'fail', 'queued', 'bdl']) bare.owns(q(n));
  k = await startKernel({ config: config(), services: { 'echo.ts': ECHO(REPLY), 'failing.ts': FAILING } });
});

afterAll(async () => {
  await k?.close();
  await bare.close();
});

async function deadLetters(channel: string): Promise<Array<{ id: number; state: string }>> {
  return (await k.kernel.runControl('queue.list', { channel: `amqp:${channel}`, state: 'dead', limit: 10 })) as Array<{ id: number; state: string }>;
}

describe('channel_amqp', () => {
  it('runs the service with the decoded body, properties and headers, then acks', async () => {
    bare.send(q('json'), { id: 7, name: 'pen' }, { messageId: 'm-1', correlationId: 'c-1', headers: { 'X-Tenant': 'acme', n: 3, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }, timestamp: 1_700_000_000 });
    const got = JSON.parse((await bare.next(REPLY)).content.toString());
    expect(got.payload).toEqual({ id: 7, name: 'pen' });
    expect(got.input).toEqual({ id: 7, name: 'pen' });
    expect(got.headers).toMatchObject({ 'content-type': 'application/json', 'message-id': 'm-1', 'correlation-id': 'c-1', 'x-tenant': 'acme', n: '3', 'routing-key': q('json'), exchange: '', redelivered: 'false', timestamp: '2023-11-14T22:13:20.000Z' });
    expect(got.source).toMatchObject({ kind: 'amqp', name: 'json-in', at: '2023-11-14T22:13:20.000Z' });
    await expect.poll(() => bare.count(q('json'))).toBe(0);
  });

  it('decodes XML bodies with the xml format', async () => {
    bare.send(q('xml'), '<order><id>9</id></order>', { contentType: 'application/xml' });
    const got = JSON.parse((await bare.next(REPLY)).content.toString());
    expect(got.payload).toMatchObject({ '#root': 'order', id: '9' });
  });

  it('dead-letters a message that is not valid for its format, with the reason, and acks it', async () => {
    bare.send(q('json'), '{"id": 7,', { messageId: 'bad-1' });
    await expect.poll(async () => (await deadLetters('json-in')).length, { timeout: 10_000 }).toBe(1);
    const [dead] = await deadLetters('json-in');
    const shown = (await k.kernel.runControl('queue.show', { id: dead!.id })) as { errors: Array<{ kind: string; message: string }>; event: unknown };
    expect(shown.errors[0]).toMatchObject({ kind: 'MessageFormatError' });
    await expect.poll(() => bare.count(q('json'))).toBe(0);
  });

  it('retries a failing service, then dead-letters it; a permanent error at once', async () => {
    bare.send(q('fail'), { n: 1 });
    bare.send(q('fail'), { permanent: true });
    await expect.poll(async () => (await deadLetters('fail-in')).length, { timeout: 10_000 }).toBe(2);
    const shown = await Promise.all((await deadLetters('fail-in')).map(async (d) => (await k.kernel.runControl('queue.show', { id: d.id })) as { errors: Array<{ kind: string; message: string; attempt?: number }>; attempts?: number }));
    const kinds = shown.map((s) => s.errors.at(-1)!.kind).sort();
    expect(kinds).toEqual(['BadRequest', 'Error']);
    expect(JSON.stringify(shown)).toContain('boom 1');
    await expect.poll(() => bare.count(q('fail'))).toBe(0);
  });

  it('with use_queue: stores the message, acks it, and the queue runs the service', async () => {
    bare.send(q('queued'), { id: 11 });
    const got = JSON.parse((await bare.next(REPLY)).content.toString());
    expect(got.payload).toEqual({ id: 11 });
    expect(got.source).toMatchObject({ kind: 'amqp', name: 'queued-in' });
    await expect.poll(() => bare.count(q('queued'))).toBe(0);
  });

  it("with dead_letter: broker: rejects to the queue's dead-letter exchange", async () => {
    bare.send(q('bdl'), { n: 2 }, { messageId: 'to-dlx' });
    const dead = await bare.next(q('dlq'));
    expect(dead.properties.messageId).toBe('to-dlx');
    expect(JSON.stringify(dead.properties.headers?.['x-death'])).toContain('rejected');
    expect(await deadLetters('broker-dl')).toEqual([]);
  });

  it('consumes a queue that exists already (no declare), and says when one does not', async () => {
    bare.send(q('existing'), { id: 12 });
    const got = JSON.parse((await bare.next(REPLY)).content.toString());
    expect(got.source).toMatchObject({ name: 'existing-in' });
    const missing = k.kernel.api.connections().find((c) => c.name === 'missing-in');
    expect(missing).toMatchObject({ kind: 'amqp', role: 'channel', state: 'down', reason: 'queue not found' });
  });

  it('does not consume at all with format settings its decoder refuses', () => {
    const bad = k.kernel.api.connections().find((c) => c.name === 'bad-settings-in');
    expect(bad).toMatchObject({ state: 'down', reason: 'data format settings invalid' });
    expect(bad!.meter.counts.size).toBe(0);
  });
});

describe('channel_amqp on a config change', () => {
  it('rebuilds a changed channel (the old one drained first), drops a removed one, keeps consuming', async () => {
    const changed = config()
      .replace(`declare: { durable: true }, service: echo }`, `declare: { durable: true }, service: echo, prefetch: 3 }`)
      .split('\n')
      .filter((l) => !l.includes('missing-in') && !l.includes('bad-settings-in'))
      .join('\n');
    expect(await k.writeConfig(changed)).toBe(true);
    await expect.poll(() => k.kernel.api.connections().filter((c) => c.kind === 'amqp' && c.role === 'channel').map((c) => c.name)).not.toContain('missing-in');
    await expect.poll(() => k.kernel.api.connections().find((c) => c.name === 'json-in')?.state).toBe('up');
    bare.send(q('json'), { id: 21 });
    const got = JSON.parse((await bare.next(REPLY)).content.toString());
    expect(got.payload).toEqual({ id: 21 });
    await expect.poll(() => bare.count(q('json'))).toBe(0);
  });
});
