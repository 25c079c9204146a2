import { callHost } from './internal/runtime.ts';

export type AmqpHeaderValue = string | number | boolean;

/** Properties of one AMQP message. */
export interface AmqpPublishOptions {
  /** Stored on disk by the broker (delivery mode 2) so it survives a broker restart; default true. */
  persistent?: boolean;
  /** The message's own headers (at most 100). */
  headers?: Record<string, AmqpHeaderValue>;
  correlationId?: string;
  /** The id consumers deduplicate by (messages are delivered at least once). */
  messageId?: string;
  /** Default: application/json for a JSON value, text/plain for a string. */
  contentType?: string;
  type?: string;
  /** Milliseconds the message may wait in a queue before the broker drops (or dead-letters) it. */
  expiration?: number;
  /** 0 to 255; only for queues declared with x-max-priority. */
  priority?: number;
}

/**
 * An AMQP connection of the server's config (`amqp_connection:`), by name. The config lists which
 * services may publish on it; services never see its address or credentials.
 */
export interface AmqpConnection {
  readonly name: string;
  /**
   * Publishes `message` (a string as it is; any other JSON value as JSON) to `exchange` (`''`:
   * the default exchange, the routing key then names a queue) and resolves once the broker
   * confirmed it (publisher confirms). Errors: NotFound (no such connection, or no such
   * exchange), Forbidden (not allowed to this service), BadRequest (a message over 16 MiB),
   * ServiceUnavailable (the broker is down or did not confirm within the connection's
   * publish_timeout_ms: the message may or may not have been taken).
   */
  publish(exchange: string, routingKey: string, message: unknown, options?: AmqpPublishOptions): Promise<void>;
}

/** The AMQP connection `name` of the config: `amqp('orders').publish('orders', 'order.created', order)`. */
export function amqp(name: string): AmqpConnection {
  if (typeof name !== 'string' || name === '') throw new TypeError('amqp: name must be a non-empty string');
  return {
    name,
    async publish(exchange, routingKey, message, options) {
      if (typeof exchange !== 'string' || typeof routingKey !== 'string') throw new TypeError('amqp.publish: exchange and routingKey must be strings');
      if (message === undefined || typeof message === 'function' || typeof message === 'symbol') throw new TypeError('amqp.publish: message must be a string or a JSON value');
      await callHost('amqp.publish', { connection: name, exchange, routingKey, message, options: options ?? {} });
    },
  };
}
