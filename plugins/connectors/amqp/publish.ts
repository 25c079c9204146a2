import type { ConfirmChannel, Options } from 'amqplib';
import { z } from 'zod';
import { SvcError, type HostCall, type HostCallContext } from '../../../sdk/plugin/index.ts';
import type { AmqpLink } from './link.ts';
import { connectionForService } from '../shared/access.ts';
import { settleWithin, waitLimit } from '../shared/wait.ts';

/** Largest message body a service may publish (RabbitMQ's own default limit is 128 MiB). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

const shortName = z.string().max(255);
const headerValue = z.union([z.string().max(64 * 1024), z.number(), z.boolean()]);

export const publishArgs = z
  .object({
    connection: z.string().min(1).max(255),
    exchange: shortName,
    routingKey: shortName,
    /** A string goes as it is; any other JSON value as JSON. */
    message: z.unknown().refine((v) => v !== undefined, 'a message is required'),
    options: z
      .object({
        persistent: z.boolean().default(true),
        headers: z.record(z.string().min(1).max(255), headerValue).refine((h) => Object.keys(h).length <= 100, 'at most 100 headers').optional(),
        correlationId: shortName.optional(),
        messageId: shortName.optional(),
        contentType: shortName.optional(),
        type: shortName.optional(),
        expiration: z.number().int().min(0).max(2 ** 31 - 1).optional(),
        priority: z.number().int().min(0).max(255).optional(),
      })
      .strict()
      .default({ persistent: true }),
  })
  .strict();

export type PublishArgs = z.infer<typeof publishArgs>;

/** The body and the properties a publish sends. */
export function encodeMessage(args: PublishArgs): { body: Buffer; options: Options.Publish } {
  const o = args.options;
  const text = typeof args.message === 'string' ? args.message : JSON.stringify(args.message);
  const body = Buffer.from(text, 'utf8');
  if (body.length > MAX_MESSAGE_BYTES) throw new SvcError('BAD_REQUEST', `message of ${body.length} bytes is larger than ${MAX_MESSAGE_BYTES} bytes`);
  const options: Options.Publish = { persistent: o.persistent, contentType: o.contentType ?? (typeof args.message === 'string' ? 'text/plain' : 'application/json') };
  if (typeof args.message !== 'string') options.contentEncoding = 'utf-8';
  if (o.headers) options.headers = o.headers;
  if (o.correlationId !== undefined) options.correlationId = o.correlationId;
  if (o.messageId !== undefined) options.messageId = o.messageId;
  if (o.type !== undefined) options.type = o.type;
  if (o.expiration !== undefined) options.expiration = String(o.expiration);
  if (o.priority !== undefined) options.priority = o.priority;
  return { body, options };
}

/**
 * Publishes with publisher confirms on one confirm channel per connection, opened on first use
 * and again after the channel or the connection closed. A publish resolves once the broker
 * confirmed it; a nack, a channel closed under it (an exchange that does not exist) or no
 * confirm within publish_timeout_ms reject.
 */
export class Publisher {
  private channel: Promise<ConfirmChannel> | undefined;
  /** Why the broker closed the channel last (e.g. `NOT_FOUND - no exchange 'x'`). */
  private closedWith: string | undefined;

  constructor(readonly link: AmqpLink) {}

  /** `timeLeftMs`: what the calling service's time limit leaves (HostCallContext.timeLeftMs); the wait ends by then too. */
  async publish(args: PublishArgs, signal?: AbortSignal, timeLeftMs = Infinity): Promise<void> {
    const { body, options } = encodeMessage(args);
    const { ms: timeoutMs, within } = waitLimit(this.link.entry.publish_timeout_ms, 'publish_timeout_ms', timeLeftMs);
    const deadline = Date.now() + timeoutMs;
    const started = this.link.meter.start();
    try {
      const channel = await this.confirmChannel(timeoutMs, within);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new SvcError('SERVICE_UNAVAILABLE', `the broker did not confirm the message ${within}`)), Math.max(1, deadline - Date.now()));
        const onAbort = () => reject(new SvcError('SERVICE_UNAVAILABLE', 'the call ended before the broker confirmed the message'));
        signal?.addEventListener('abort', onAbort, { once: true });
        try {
          channel.publish(args.exchange, args.routingKey, body, options, (err) => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            if (!err) resolve();
            else reject(this.refusal());
          });
        } catch (err) {
          clearTimeout(timer);
          reject(err instanceof SvcError ? err : new SvcError('SERVICE_UNAVAILABLE', `AMQP connection '${this.link.entry.name}' cannot publish now`));
        }
      });
      this.link.meter.done('publish', 'ok', started);
    } catch (err) {
      this.link.meter.done('publish', 'error', started);
      throw err;
    }
  }

  private refusal(): SvcError {
    const why = this.closedWith;
    if (why?.includes('NOT_FOUND')) return new SvcError('NOT_FOUND', `the broker refused the message: ${why}`);
    if (why !== undefined) return new SvcError('SERVICE_UNAVAILABLE', `the broker refused the message: ${why}`);
    return new SvcError('SERVICE_UNAVAILABLE', 'the broker did not accept the message (nack)');
  }

  /**
   * The confirm channel, opened once for every publish waiting on it (within publish_timeout_ms);
   * each publish waits for it at most its own `timeoutMs`.
   */
  private async confirmChannel(timeoutMs: number, within: string): Promise<ConfirmChannel> {
    this.channel ??= this.openChannel(this.link.entry.publish_timeout_ms);
    if (timeoutMs >= this.link.entry.publish_timeout_ms) return this.channel;
    const channel = await settleWithin(this.channel, timeoutMs, () => undefined);
    if (channel) return channel;
    const link = this.link;
    throw new SvcError('SERVICE_UNAVAILABLE', `AMQP connection '${link.entry.name}' is ${link.state}${link.reason ? ` (${link.reason})` : ''}: no channel ${within}`);
  }

  private async openChannel(timeoutMs: number): Promise<ConfirmChannel> {
    try {
      const conn = await this.link.current(timeoutMs);
      const channel = await conn.createConfirmChannel();
      this.closedWith = undefined;
      const opened = this.channel;
      channel.on('error', (err: Error) => {
        this.closedWith = (/with message "(.*)"$/.exec(err.message)?.[1] ?? err.message).slice(0, 300);
      });
      channel.on('close', () => {
        if (this.channel === opened) this.channel = undefined;
      });
      return channel;
    } catch (err) {
      this.channel = undefined;
      throw err instanceof SvcError ? err : new SvcError('SERVICE_UNAVAILABLE', `AMQP connection '${this.link.entry.name}' cannot open a channel now`);
    }
  }
}

/**
 * `amqp.publish`: a service publishes on a connection of the config, by name. Unknown name:
 * NOT_FOUND; a service not in allowed_services: FORBIDDEN (both logged at warn).
 */
export function publishHostCall(publisherOf: (name: string) => Publisher | undefined): HostCall<PublishArgs> {
  return {
    op: 'amqp.publish',
    args: publishArgs,
    quota: 'outgoing_calls_per_minute',
    handler: async (args, ctx: HostCallContext) => {
      const publisher = connectionForService('AMQP', args.connection, publisherOf, (p) => p.link.entry.allowed_services, ctx);
      await publisher.publish(args, ctx.signal, ctx.timeLeftMs());
      return null;
    },
  };
}
