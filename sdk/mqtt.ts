import { callHost } from './internal/runtime.ts';

/** MQTT 5 message properties (a connection with protocol_version 5 only; BadRequest otherwise). */
export interface MqttProperties {
  contentType?: string;
  /** Sent as the bytes of this string (UTF-8). */
  correlationData?: string;
  responseTopic?: string;
  userProperties?: Record<string, string>;
  /** Seconds the broker keeps the message for subscribers that have not got it yet. */
  messageExpiryInterval?: number;
}

export interface MqttPublishOptions {
  /** 0 at most once, 1 at least once (default), 2 exactly once. */
  qos?: 0 | 1 | 2;
  /** The broker keeps the message as the topic's last and gives it to later subscribers (default false). */
  retain?: boolean;
  properties?: MqttProperties;
}

/**
 * An MQTT connection of the server's config (`mqtt_connection:`), by name. Errors: NotFound (no
 * such connection), Forbidden (not in its allowed_services), BadRequest (a topic with wildcards,
 * a message over max_message_bytes), ServiceUnavailable (the broker did not take it within the
 * connection's publish_timeout_ms).
 */
export interface MqttConnection {
  readonly name: string;
  /**
   * Publishes a message: a string as it is, anything else as its JSON text. Resolves once the
   * broker confirmed it as the QoS asks (QoS 0: once sent).
   */
  publish(topic: string, message: unknown, options?: MqttPublishOptions): Promise<void>;
}

class MqttHandle implements MqttConnection {
  constructor(readonly name: string) {}

  async publish(topic: string, message: unknown, options?: MqttPublishOptions): Promise<void> {
    if (typeof topic !== 'string' || topic === '') throw new TypeError('mqtt.publish: topic must be a non-empty string');
    if (message === undefined || typeof message === 'function' || typeof message === 'symbol') throw new TypeError('mqtt.publish: message must be a string or JSON');
    await callHost('mqtt.publish', { connection: this.name, topic, message, options: options ?? {} });
  }
}

/** A named MQTT connection of the config: `mqtt('sensors').publish('plant/1/temp', { c: 21.5 })`. */
export function mqtt(name: string): MqttConnection {
  if (typeof name !== 'string' || name === '') throw new TypeError('mqtt: name must be a non-empty string');
  return new MqttHandle(name);
}
