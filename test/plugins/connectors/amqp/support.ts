import { randomBytes } from 'node:crypto';
import amqp, { type Channel, type ChannelModel, type GetMessage } from 'amqplib';
import { expect } from 'vitest';

export const BROKER = 'amqp://guest:guest@127.0.0.1:5672';

/** A random suffix: vitest runs files in parallel and CI runs the suite on three Node lines. */
export const suffix = randomBytes(4).toString('hex');

/** A bare amqplib client, as a test's own view of the broker. */
export class Bare {
  conn!: ChannelModel;
  ch!: Channel;
  private readonly created: string[] = [];
  private readonly exchanges: string[] = [];

  async open(): Promise<this> {
    this.conn = await amqp.connect(BROKER);
    this.conn.on('error', () => {});
    this.ch = await this.conn.createChannel();
    this.ch.on('error', () => {});
    return this;
  }

  async queue(name: string, args: Record<string, unknown> = {}): Promise<string> {
    await this.ch.assertQueue(name, { durable: true, arguments: args });
    this.created.push(name);
    return name;
  }

  async exchange(name: string, type = 'fanout'): Promise<string> {
    await this.ch.assertExchange(name, type, { durable: false });
    this.exchanges.push(name);
    return name;
  }

  /** Forgets a queue svc declared, so close() deletes it. */
  owns(name: string): string {
    this.created.push(name);
    return name;
  }

  send(queue: string, body: unknown, options: Record<string, unknown> = {}): void {
    const content = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    this.ch.sendToQueue(queue, content, { persistent: true, contentType: 'application/json', ...options });
  }

  async count(queue: string): Promise<number> {
    return (await this.ch.checkQueue(queue)).messageCount;
  }

  /** The next message on the queue (acked), waiting for it. */
  async next(queue: string, timeout = 10_000): Promise<GetMessage> {
    let got: GetMessage | false = false;
    await expect
      .poll(
        async () => {
          got = await this.ch.get(queue, { noAck: true });
          return got !== false;
        },
        { timeout, interval: 25 },
      )
      .toBe(true);
    return got as unknown as GetMessage;
  }

  async close(): Promise<void> {
    for (const q of this.created) await this.ch.deleteQueue(q).catch(() => {});
    for (const e of this.exchanges) await this.ch.deleteExchange(e).catch(() => {});
    await this.conn.close().catch(() => {});
  }
}

/** A service that publishes what it got (payload, headers, source) to the queue named by its reply key. */
export const ECHO = (reply: string) => `import { service, amqp } from 'svc/sdk';
export default service({
  async handle(ctx) {
    await amqp('main').publish('', '${reply}', { payload: ctx.payload, input: ctx.input, headers: ctx.headers, source: ctx.delivery?.source, raw: typeof ctx.rawBody === 'string' ? ctx.rawBody : null });
    return { ok: true };
  },
});
`;
