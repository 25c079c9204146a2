import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import type { Logger } from 'pino';
import { ConnectionMeter, MessageFormatError, type KernelApi, type TraceContext } from '../../../sdk/plugin/index.ts';
import { formatSettingsOf } from '../shared/fields.ts';
import { InboundPipeline, type Disposition } from '../shared/inbound.ts';
import type { AmqpLink, LinkState } from './link.ts';
import type { ChannelAmqpEntry } from './schema.ts';

const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** Longest wait at shutdown for messages in flight to settle. */
export const DRAIN_WAIT_MS = 10_000;

function text(value: unknown): string {
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** The service's ctx.headers: the message's properties, its routing, then its own headers. */
export function messageHeaders(msg: ConsumeMessage): Record<string, string> {
  const p = msg.properties;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(p.headers ?? {})) {
    if (value !== undefined && value !== null) headers[name.toLowerCase()] = text(value);
  }
  const props: Array<[string, unknown]> = [
    ['content-type', p.contentType],
    ['content-encoding', p.contentEncoding],
    ['message-id', p.messageId],
    ['correlation-id', p.correlationId],
    ['reply-to', p.replyTo],
    ['type', p.type],
    ['app-id', p.appId],
    ['timestamp', typeof p.timestamp === 'number' ? new Date(p.timestamp * 1000).toISOString() : undefined],
  ];
  for (const [name, value] of props) if (value !== undefined && value !== null) headers[name] = text(value);
  headers['routing-key'] = msg.fields.routingKey;
  headers.exchange = msg.fields.exchange;
  headers.redelivered = String(msg.fields.redelivered);
  return headers;
}

function traceOf(headers: Record<string, string>): TraceContext | undefined {
  const tp = headers.traceparent;
  if (tp === undefined || !TRACEPARENT.test(tp)) return undefined;
  const trace: TraceContext = { traceparent: tp };
  if (headers.tracestate !== undefined && headers.tracestate.length <= 512) trace.tracestate = headers.tracestate;
  return trace;
}

/**
 * One channel_amqp entry: a channel of its own on the connection's consumer link, re-made at
 * every connect (queue declared or checked, bindings, prefetch, consume). Each delivery goes
 * through the InboundPipeline, at most `concurrency` at once, and is answered on the channel it
 * came on: a channel that closed meanwhile cannot take the answer, and the broker redelivers.
 */
export class AmqpConsumer {
  readonly meter: ConnectionMeter;
  reason: string | undefined = 'waiting for the connection';
  private consuming = false;
  private channel: Channel | undefined;
  private consumerTag: string | undefined;
  private readonly stop = new AbortController();
  private readonly pipeline: InboundPipeline;
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  /** The link's newest connection: a channel lost alone is re-made on it. */
  private latest: ChannelModel | undefined;
  private attached = false;
  private refused = false;
  private unsubscribe: (() => void) | undefined;
  private readonly formatSettings: unknown;

  constructor(
    readonly entry: ChannelAmqpEntry,
    readonly link: AmqpLink,
    private readonly kernel: KernelApi,
    private readonly log: Logger,
  ) {
    this.meter = new ConnectionMeter(kernel.clock);
    this.formatSettings = formatSettingsOf(entry);
    this.pipeline = new InboundPipeline(
      { source: 'amqp', name: entry.name, service: entry.service, data_format: entry.data_format, formatSettings: this.formatSettings, delivery: entry.delivery, deadLetter: entry.dead_letter },
      { kernel, meter: this.meter, log, stop: this.stop.signal },
    );
  }

  get state(): LinkState {
    if (this.consuming) return 'up';
    if (this.refused) return 'down';
    if (this.link.state === 'up') return 'down';
    return this.link.state === 'down' ? 'down' : 'connecting';
  }

  /** Declares the channel's Use queue lane (at each config). */
  declare(): void {
    this.pipeline.declare();
  }

  begin(): void {
    const refused = this.settingsRefusal();
    if (refused !== undefined) {
      // Every message would fail the same way, and be handed back at once, again and again: not consumed at all.
      this.refused = true;
      this.reason = 'data format settings invalid';
      this.log.error({ channel: this.entry.name }, `AMQP channel not consuming: its ${this.entry.data_format} settings are refused (${refused})`);
      return;
    }
    this.unsubscribe = this.link.onUp((conn) => {
      if (this.attached) this.meter.reconnects++;
      this.latest = conn;
      void this.attach(conn);
    });
    this.link.start();
  }

  /** The format's settings as its decoder reads them (the config check cannot, they are the format plugin's). */
  private settingsRefusal(): string | undefined {
    try {
      this.kernel.decodeMessage(this.entry.data_format, Buffer.from('{}'), this.formatSettings);
      return undefined;
    } catch (err) {
      return err instanceof MessageFormatError ? undefined : (err as Error).message.slice(0, 300);
    }
  }

  private async attach(conn: ChannelModel): Promise<void> {
    if (this.stopped) return;
    const e = this.entry;
    let channel: Channel | undefined;
    try {
      channel = await conn.createChannel();
      channel.on('error', (err: Error) => {
        this.reason = /404|NOT_FOUND/.test(err.message) ? 'queue not found' : /406|PRECONDITION/.test(err.message) ? 'queue settings differ from the broker\'s' : 'channel closed by the broker';
        this.log.warn({ channel: e.name, reason: this.reason }, `AMQP channel error: ${err.message.slice(0, 200)}`);
      });
      channel.on('close', () => this.detached(channel!));
      await channel.prefetch(e.prefetch);
      if (e.declare) {
        await channel.assertQueue(e.queue, { durable: e.declare.durable, arguments: e.declare.arguments });
        for (const b of e.declare.bindings) await channel.bindQueue(e.queue, b.exchange, b.routing_key);
      } else {
        await channel.checkQueue(e.queue);
      }
      const ch = channel;
      const { consumerTag } = await channel.consume(e.queue, (msg) => {
        if (msg) this.deliver(ch, msg);
        // null: the broker cancelled the consumer (queue deleted); the channel stays, we re-attach.
        else void ch.close().catch(() => {});
      });
      this.channel = channel;
      this.consumerTag = consumerTag;
      this.consuming = true;
      this.attached = true;
      this.reason = undefined;
      this.log.info({ channel: e.name }, 'AMQP channel consuming');
    } catch (err) {
      this.reason ??= 'channel setup failed';
      this.log.warn({ channel: e.name, reason: this.reason, err: (err as Error).message.slice(0, 200) }, 'AMQP channel could not start consuming');
      await channel?.close().catch(() => {});
    }
  }

  /** The channel closed: try again on the same connection after a while, unless the connection went. */
  private detached(channel: Channel): void {
    if (this.channel === channel) {
      this.channel = undefined;
      this.consumerTag = undefined;
      this.consuming = false;
    }
    if (this.stopped || this.retryTimer) return;
    this.reason ??= 'channel closed';
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      // The link makes a new channel itself after a reconnect; here only a channel lost alone.
      if (!this.stopped && !this.channel && this.link.state === 'up' && this.latest) void this.attach(this.latest);
    }, this.link.entry.reconnect.max_ms / 4);
    this.retryTimer.unref();
  }

  private deliver(channel: Channel, msg: ConsumeMessage): void {
    const run = async () => {
      if (this.running >= (this.entry.concurrency ?? this.entry.prefetch)) await new Promise<void>((r) => this.waiting.push(r));
      this.running++;
      try {
        const headers = messageHeaders(msg);
        const trace = traceOf(headers);
        const message: Parameters<InboundPipeline['handle']>[0] = { body: msg.content, headers };
        if (typeof msg.properties.timestamp === 'number') message.at = headers.timestamp;
        if (trace) message.trace = trace;
        const disposition = await this.pipeline.handle(message);
        this.answer(channel, msg, disposition);
      } finally {
        this.running--;
        this.waiting.shift()?.();
      }
    };
    const p = run();
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private answer(channel: Channel, msg: ConsumeMessage, d: Disposition): void {
    try {
      if (d.action === 'ack') channel.ack(msg);
      else channel.nack(msg, false, d.action === 'requeue');
    } catch {
      // The channel closed while the message ran: the broker delivers it again (at least once).
      this.meter.done('ack', 'stale');
    }
  }

  /** Shutdown: no new deliveries, running ones settle (bounded), then the channel closes and unacked messages return to the queue. */
  async drain(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearTimeout(this.retryTimer);
    const channel = this.channel;
    if (channel && this.consumerTag) await channel.cancel(this.consumerTag).catch(() => {});
    this.stop.abort();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((r) => (timer = setTimeout(r, DRAIN_WAIT_MS)))]);
    clearTimeout(timer);
    this.consuming = false;
    this.reason = 'stopped';
    if (channel) await channel.close().catch(() => {});
  }
}
