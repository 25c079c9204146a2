import { z } from 'zod';
import type { Logger } from 'pino';
import { MessageFormatError, SvcError, type ConnectionMeter, type EventOutcome, type InvokeRequest, type KernelApi, type SourceEvent, type TraceContext } from '../../../sdk/plugin/index.ts';

/**
 * What every inbound connector channel (an AMQP queue, an MQTT subscription) does with one message,
 * whatever the broker: decode it with the channel's data format, then either store it in the Use
 * queue (`use_queue: true`, which retries and dead-letters it) or run the service now with retries
 * in place; a message that cannot succeed goes to svc's dead-letter queue with its reason. What it
 * resolves with tells the connector what to answer the broker, and it answers only once the
 * message is done with: run, stored, or dead-lettered.
 */

/** The delivery settings every inbound channel has (its `delivery:` key). */
export const inboundDeliverySchema = z
  .object({
    use_queue: z
      .boolean()
      .default(false)
      .describe('Store each message in the Use queue (durably, in the same store as channels\' queued requests) and acknowledge it then; the queue runs the service with its retries and dead letters. Off: the service runs first and the message is acknowledged after it succeeded.'),
    max_attempts: z.number().int().min(1).max(100).default(5).describe('Runs of the service per message in all, the first included, before it is dead-lettered (in place, or in the Use queue).'),
    base_delay_ms: z.number().int().min(0).max(3_600_000).default(1_000).describe('Wait before the first retry; doubles per retry, with full jitter.'),
    max_delay_ms: z.number().int().min(0).max(86_400_000).default(60_000).describe('Longest wait between two attempts.'),
  })
  .strict();

export type InboundDelivery = z.infer<typeof inboundDeliverySchema>;

/** One message as a connector hands it over. */
export interface InboundMessage {
  body: Buffer;
  /** The service's ctx.headers: the message's properties and headers, names lower-case. */
  headers: Record<string, string>;
  /** When the message was sent or received, ISO 8601. */
  at?: string;
  trace?: TraceContext;
  /**
   * The message already decoded by the connector (a parsed mail): it is the service's
   * ctx.payload as it is, and the channel's data format is not used. `body` is then what is kept
   * as ctx.rawBody when the message is refused (`refuse`).
   */
  payload?: unknown;
}

/**
 * What the connector tells the broker:
 * - `ack`: done with (the service succeeded, the message is stored in the Use queue, or it is in
 *   svc's dead-letter queue);
 * - `requeue`: not done with, the broker should deliver it again (svc is stopping, or its store
 *   could not take the message; the pipeline waited a backoff first, so this is no hot loop);
 * - `reject`: failed for good, for the broker's own dead-letter handling (`deadLetter: 'broker'`).
 */
export type Disposition = { action: 'ack'; outcome: 'ok' | 'queued' | 'dead_letter' } | { action: 'requeue'; why: string } | { action: 'reject'; why: string };

export interface InboundChannel {
  /** The source plugin (`amqp`, `mqtt`): `ctx.delivery.source.kind`. */
  source: string;
  /** The channel's name in the config: `ctx.delivery.source.name`. */
  name: string;
  service: string;
  data_format: string;
  /** The format's own settings (`xml:`, `json:`...), as the channel's config gives them. */
  formatSettings?: unknown;
  delivery: InboundDelivery;
  /** Where a message that failed for good goes: svc's dead-letter queue, or back to the broker (rejected). */
  deadLetter: 'svc' | 'broker';
}

export interface InboundDeps {
  kernel: KernelApi;
  meter: ConnectionMeter;
  log: Logger;
  /** [0, 1), for backoff jitter. */
  random?: () => number;
  /** Aborted when shutdown begins: a wait between attempts ends, and the message is handed back unprocessed. */
  stop: AbortSignal;
}

/** The Use queue lane of a channel's messages: `amqp:orders-in`. */
export function inboundQueueName(channel: Pick<InboundChannel, 'source' | 'name'>): string {
  return `${channel.source}:${channel.name}`;
}

/** Wait before handing a message back because svc could not take it now (store down). */
const HAND_BACK_DELAY_MS = 1_000;

export class InboundPipeline {
  private readonly random: () => number;

  constructor(
    private readonly channel: InboundChannel,
    private readonly deps: InboundDeps,
  ) {
    this.random = deps.random ?? Math.random;
  }

  /** Waits ms, or less when shutdown begins meanwhile. */
  private sleep(ms: number): Promise<void> {
    const stop = this.deps.stop;
    if (stop.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stop.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      stop.addEventListener('abort', done, { once: true });
    });
  }

  /** Declares the channel's Use queue lane (again at each config). */
  declare(): void {
    const d = this.channel.delivery;
    this.deps.kernel.lookup('events.durable')?.declareQueue(inboundQueueName(this.channel), { max_attempts: d.max_attempts, base_delay_ms: d.base_delay_ms, max_delay_ms: d.max_delay_ms, jitter: true });
  }

  /** Handles one message to its end. Never throws. */
  async handle(message: InboundMessage): Promise<Disposition> {
    return this.settle(() => this.process(message));
  }

  /**
   * Dead-letters a message the connector will not run (too large, no parsable mail), with why:
   * its body is kept as the dead letter's raw body, its payload (if any) beside. Never throws.
   */
  async refuse(message: InboundMessage, reason: { kind: string; message: string }): Promise<Disposition> {
    return this.settle(() => {
      const event = this.eventOf(message);
      if (message.payload !== undefined) event.payload = message.payload;
      event.rawBody = message.body;
      return this.deadLetter(event, { ...reason, attempts: 0 });
    });
  }

  private async settle(run: () => Promise<Disposition>): Promise<Disposition> {
    const started = this.deps.meter.start();
    let result: Disposition;
    try {
      result = await run();
    } catch (err) {
      // A bug here must not lose the message: the broker keeps it.
      this.deps.log.error({ err, channel: this.channel.name }, 'inbound message could not be handled; handed back to the broker');
      result = { action: 'requeue', why: 'internal error' };
    }
    this.deps.meter.done('consume', result.action === 'ack' ? result.outcome : result.action === 'requeue' ? 'requeued' : 'rejected', started);
    return result;
  }

  private eventOf(message: InboundMessage): SourceEvent {
    const ch = this.channel;
    const event: SourceEvent = { source: ch.source, name: ch.name, service: ch.service, headers: message.headers, cid: this.deps.kernel.newCid() };
    if (message.at !== undefined) event.at = message.at;
    if (message.trace) event.trace = message.trace;
    return event;
  }

  private async process(message: InboundMessage): Promise<Disposition> {
    const { kernel } = this.deps;
    const ch = this.channel;
    const event = this.eventOf(message);
    if (message.payload !== undefined) {
      event.payload = message.payload;
      return ch.delivery.use_queue ? this.store(event) : this.runInPlace(event);
    }
    try {
      const decoded = kernel.decodeMessage(ch.data_format, message.body, ch.formatSettings);
      if (decoded.payload !== undefined) event.payload = decoded.payload;
      if (decoded.textFields) event.textFields = true;
      if (decoded.raw) event.rawBody = message.body;
    } catch (err) {
      if (!(err instanceof MessageFormatError)) throw err;
      // Not valid for the channel's format: no attempt can help. Kept as it came, for a look and a replay.
      event.rawBody = message.body;
      return this.deadLetter(event, { kind: 'MessageFormatError', message: err.message, attempts: 0 });
    }
    if (ch.delivery.use_queue) return this.store(event);
    return this.runInPlace(event);
  }

  private async store(event: SourceEvent): Promise<Disposition> {
    const durable = this.deps.kernel.lookup('events.durable');
    if (!durable) return this.handBack('the Use queue is off');
    try {
      const stored = await this.deps.kernel.store.transaction((tx) => durable.enqueue(tx, inboundQueueName(this.channel), event), { durable: true });
      stored.committed();
      return { action: 'ack', outcome: 'queued' };
    } catch (err) {
      const why = err instanceof SvcError && err.code === 'QUEUE_FULL' ? 'the Use queue is full' : 'the store could not take the message';
      this.deps.log.warn({ err, channel: this.channel.name, cid: event.cid }, `inbound message not stored (${why}); handed back to the broker`);
      return this.handBack(why);
    }
  }

  private async runInPlace(event: SourceEvent): Promise<Disposition> {
    const { kernel, log } = this.deps;
    const d = this.channel.delivery;
    const first = kernel.eventRequest(event);
    let last: Extract<EventOutcome, { ok: false }> | undefined;
    for (let attempt = 1; attempt <= d.max_attempts; attempt++) {
      if (attempt > 1) {
        await this.sleep(this.backoff(attempt - 1));
        // Shutdown while waiting: not processed, so not acknowledged; the broker delivers it again.
        if (this.deps.stop.aborted) return { action: 'requeue', why: 'svc is stopping' };
      }
      const request: InvokeRequest = attempt === 1 ? first : { ...first, cid: kernel.newCid(), delivery: { ...first.delivery!, attempt } };
      const outcome = await kernel.runEvent(request);
      if (outcome.ok) return { action: 'ack', outcome: 'ok' };
      last = outcome;
      log.warn({ cid: request.cid, channel: this.channel.name, service: event.service, attempt, kind: outcome.kind }, `inbound message: the service failed (${outcome.message})`);
      if (outcome.permanent) return this.deadLetter(event, { kind: outcome.kind, message: outcome.message, attempts: attempt });
      if (outcome.kind === 'Interrupted' || this.deps.stop.aborted) return { action: 'requeue', why: 'svc is stopping' };
    }
    return this.deadLetter(event, { kind: last?.kind ?? 'Error', message: last?.message ?? 'failed', attempts: d.max_attempts });
  }

  private async deadLetter(event: SourceEvent, reason: { kind: string; message: string; attempts: number }): Promise<Disposition> {
    const { log } = this.deps;
    if (this.channel.deadLetter === 'broker') {
      log.warn({ cid: event.cid, channel: this.channel.name, kind: reason.kind }, `inbound message rejected to the broker's dead-letter handling: ${reason.message}`);
      return { action: 'reject', why: `${reason.kind}: ${reason.message}` };
    }
    const durable = this.deps.kernel.lookup('events.durable');
    if (!durable) return this.handBack('the Use queue (which keeps dead letters) is off');
    try {
      const { id } = await durable.deadLetter(inboundQueueName(this.channel), event, reason);
      log.warn({ cid: event.cid, channel: this.channel.name, kind: reason.kind, dead_letter: id }, `inbound message dead-lettered: ${reason.message}`);
      return { action: 'ack', outcome: 'dead_letter' };
    } catch (err) {
      log.error({ err, cid: event.cid, channel: this.channel.name }, 'inbound message could not be dead-lettered; handed back to the broker');
      return this.handBack('the store could not take the dead letter');
    }
  }

  private async handBack(why: string): Promise<Disposition> {
    await this.sleep(HAND_BACK_DELAY_MS);
    return { action: 'requeue', why };
  }

  private backoff(retry: number): number {
    const d = this.channel.delivery;
    const ceiling = Math.min(d.max_delay_ms, d.base_delay_ms * 2 ** (retry - 1));
    return Math.round(Math.min(1, Math.max(0, this.random())) * ceiling);
  }
}
