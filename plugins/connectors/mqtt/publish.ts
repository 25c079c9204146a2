import type { IClientPublishOptions, MqttClient } from 'mqtt';
import { z } from 'zod';
import { SvcError, type HostCall, type HostCallContext } from '../../../sdk/plugin/index.ts';
import type { BrokerLink } from './client.ts';
import { topicNameProblem, type MqttConnectionEntry } from './schema.ts';
import { connectionForService } from '../shared/access.ts';
import { waitLimit, type WaitLimit } from '../shared/wait.ts';

/** One outgoing connection: its entry and its broker link. */
export interface PublishConnection {
  entry: MqttConnectionEntry;
  link: BrokerLink;
}

// Topic rules are checked in the handler: a service's bad topic is its BadRequest, not an internal error.
const topicArg = z.string().max(4 * 65_535);

function checkTopic(what: string, topic: string): void {
  const problem = topicNameProblem(topic);
  if (problem) throw new SvcError('BAD_REQUEST', `${what} ${problem}`);
}

export const publishArgs = z
  .object({
    connection: z.string().min(1).max(256),
    topic: topicArg,
    // Sent as JSON by the SDK: a string is sent as it is, anything else as its JSON text.
    message: z.unknown().refine((m) => m !== undefined, 'a message is required'),
    options: z
      .object({
        qos: z.union([z.literal(0), z.literal(1), z.literal(2)]).default(1),
        retain: z.boolean().default(false),
        properties: z
          .object({
            contentType: z.string().max(1024).optional(),
            correlationData: z.string().max(65_535).optional(),
            responseTopic: topicArg.optional(),
            userProperties: z.record(z.string().max(1024), z.string().max(65_535)).optional(),
            messageExpiryInterval: z.number().int().min(0).max(4_294_967_295).optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .default({ qos: 1, retain: false }),
  })
  .strict();

export type PublishArgs = z.infer<typeof publishArgs>;

/** Resolves once the client is connected, or throws ServiceUnavailable after `ms`. */
function whenConnected(client: MqttClient, wait: WaitLimit, signal: AbortSignal): Promise<void> {
  if (client.connected) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      clearTimeout(timer);
      client.off('connect', onConnect);
      signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve();
    };
    const onConnect = () => done();
    const onAbort = () => done(new SvcError('SERVICE_UNAVAILABLE', 'the call ended while waiting for the MQTT broker'));
    const timer = setTimeout(() => done(new SvcError('SERVICE_UNAVAILABLE', `MQTT broker not reachable ${wait.within}`)), wait.ms);
    client.on('connect', onConnect);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function publishOptions(args: PublishArgs, entry: MqttConnectionEntry): IClientPublishOptions {
  const { qos, retain, properties } = args.options;
  const options: IClientPublishOptions = { qos, retain };
  if (properties && Object.keys(properties).length) {
    if (entry.protocol_version !== 5) throw new SvcError('BAD_REQUEST', `message properties need MQTT 5: connection '${entry.name}' speaks 3.1.1 (protocol_version 4)`);
    const { correlationData, ...rest } = properties;
    options.properties = { ...rest, ...(correlationData === undefined ? {} : { correlationData: Buffer.from(correlationData) }) };
  }
  return options;
}

async function publish(conn: PublishConnection, args: PublishArgs, signal: AbortSignal, timeLeftMs: number): Promise<void> {
  const { entry, link } = conn;
  checkTopic('The topic', args.topic);
  if (args.options.properties?.responseTopic !== undefined) checkTopic('The responseTopic', args.options.properties.responseTopic);
  const body = Buffer.from(typeof args.message === 'string' ? args.message : JSON.stringify(args.message));
  if (body.length > entry.max_message_bytes) throw new SvcError('BAD_REQUEST', `Message of ${body.length} bytes is larger than connection '${entry.name}' takes (max_message_bytes ${entry.max_message_bytes})`);
  const options = publishOptions(args, entry);
  const client = link.client;
  if (!client) throw new SvcError('SERVICE_UNAVAILABLE', `MQTT connection '${entry.name}' is not open`);
  const wait = waitLimit(entry.publish_timeout_ms, 'publish_timeout_ms', timeLeftMs);
  const deadline = performance.now() + wait.ms;
  await whenConnected(client, wait, signal);
  const left = Math.max(1, Math.round(deadline - performance.now()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new SvcError('SERVICE_UNAVAILABLE', `MQTT broker did not confirm the publish ${wait.within}`)), left);
    client.publish(args.topic, body, options, (err) => {
      clearTimeout(timer);
      if (err) reject(new SvcError('SERVICE_UNAVAILABLE', `MQTT publish failed: ${err.message}`));
      else resolve();
    });
  });
}

/**
 * `mqtt.publish`: a service's message to a topic through a named connection, resolved once the
 * QoS handshake completed (QoS 0: once written). Unknown connection NotFound, a service not in
 * allowed_services Forbidden (both logged at warn), broker unreachable ServiceUnavailable.
 */
export function publishHostCall(connections: () => ReadonlyMap<string, PublishConnection>): HostCall<PublishArgs> {
  const open = (name: string, ctx: HostCallContext): PublishConnection => connectionForService('MQTT', name, (n) => connections().get(n) as PublishConnection | undefined, (c) => c.entry.allowed_services, ctx);
  return {
    op: 'mqtt.publish',
    args: publishArgs,
    quota: 'outgoing_calls_per_minute',
    handler: async (args, ctx) => {
      const conn = open(args.connection, ctx);
      await conn.link.meter.time('publish', () => publish(conn, args, ctx.signal, ctx.timeLeftMs()));
      return null;
    },
  };
}
