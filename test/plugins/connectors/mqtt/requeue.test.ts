import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { KernelApi, SourceEvent } from '../../../../sdk/plugin/index.ts';
import { MqttChannel } from '../../../../plugins/connectors/mqtt/channel.ts';
import { channelEntrySchema } from '../../../../plugins/connectors/mqtt/schema.ts';
import { BROKER_URL, bareClient, uniquePrefix } from './support.ts';

/**
 * A message the pipeline hands back (the store could not take it) is not acknowledged: the
 * channel drops its connection, and the broker delivers the message again in the session.
 * The channel runs on a stand-in kernel whose store fails the first transaction.
 */
const P = uniquePrefix();
const CLIENT_ID = `${P.replace('/', '-')}-requeue`;
const stored: SourceEvent[] = [];
let transactions = 0;

const kernel = {
  log: pino({ level: 'silent' }),
  dataDir: '/tmp/unused',
  clock: { now: () => Date.now() },
  newCid: () => `cid-${transactions}`,
  decodeMessage: (_format: string, body: Buffer) => ({ payload: JSON.parse(body.toString()) }),
  store: {
    async transaction<T>(fn: (tx: unknown) => Promise<T>): Promise<T> {
      if (++transactions === 1) throw new Error('store down');
      return fn({});
    },
  },
  lookup: (name: string) =>
    name === 'events.durable'
      ? {
          declareQueue() {},
          async enqueue(_tx: unknown, _queue: string, event: SourceEvent) {
            stored.push(event);
            return { id: stored.length, cid: 'x', committed() {} };
          },
        }
      : undefined,
} as unknown as KernelApi;

const entry = channelEntrySchema.parse({ name: 'requeue', client_id: CLIENT_ID, url: BROKER_URL, reconnect: { min_ms: 100, max_ms: 200 }, topics: [`${P}/#`], service: 'any', delivery: { use_queue: true } });
const channel = new MqttChannel(entry, kernel);

afterAll(async () => {
  await channel.drain();
  await (await bareClient({ clientId: CLIENT_ID, clean: true })).endAsync();
});

describe('a message handed back', () => {
  it('is not acknowledged: the broker delivers it again, and it is stored then', async () => {
    await channel.start();
    await expect.poll(() => channel.link.state).toBe('up');
    const sender = await bareClient();
    await sender.publishAsync(`${P}/a`, JSON.stringify({ n: 1 }), { qos: 1 });
    await sender.endAsync();
    await expect.poll(() => stored.length, { timeout: 10_000 }).toBe(1);
    expect(transactions).toBe(2);
    expect(stored[0]).toMatchObject({ source: 'mqtt', name: 'requeue', payload: { n: 1 }, headers: { 'mqtt-topic': `${P}/a`, 'mqtt-dup': 'true' } });
    expect(channel.link.meter.reconnects).toBe(1);
    expect(channel.link.meter.counts.get('consume requeued')).toBe(1);
    expect(channel.link.meter.counts.get('consume queued')).toBe(1);
  });
});
