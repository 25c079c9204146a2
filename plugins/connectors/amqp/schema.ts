import { z } from 'zod';
import { bundledPluginOn, type ConfigIssue, type SvcConfig, type ValidationContext, hostPath, scopedRef } from '../../../sdk/plugin/index.ts';
import { passwordFields, passwordIssues } from '../shared/credentials.ts';
import { inboundDeliverySchema } from '../shared/inbound.ts';
import { allowedServicesField, formatSettingsFields, formatSettingsIssues, readyCheckField, reconnectSchema } from '../shared/fields.ts';

const urlSchema = z
  .string()
  .refine((u) => {
    try {
      const p = new URL(u).protocol;
      return p === 'amqp:' || p === 'amqps:';
    } catch {
      return false;
    }
  }, 'must be an amqp:// or amqps:// address')
  .describe('Broker address, amqp://user:pass@host:5672/vhost or amqps://…; may hold credentials (give them as ${ENV}). Instead of host/port/vhost/username/password.')
  .meta({ writeOnly: true });

const tlsSchema = z
  .object({
    reject_unauthorized: z.boolean().default(true).describe('Refuse brokers whose certificate does not verify; false only for test systems.'),
    ca_file: hostPath(z.string().min(1)).optional().describe('PEM file of extra certificate authorities to trust.'),
    server_name: z.string().min(1).optional().describe('Name to verify the certificate against, when it differs from the host.'),
  })
  .strict();

export const amqpConnectionSchema = z
  .object({
    name: z.string().min(1).describe('Unique; services publish with amqp(name), channels consume with connection: name.'),
    url: urlSchema.optional(),
    host: z.string().min(1).optional().describe('Broker host, when no url is given.'),
    port: z.number().int().min(1).max(65535).optional().describe('Broker port; default 5672, 5671 with tls.'),
    vhost: z.string().default('/').describe('Virtual host.'),
    username: z.string().min(1).optional().describe('User name (default guest).'),
    ...passwordFields,
    heartbeat_s: z.number().int().min(0).max(3600).default(30).describe('AMQP heartbeat interval in seconds; 0 turns heartbeats off.'),
    connect_timeout_ms: z.number().int().min(100).max(300_000).default(10_000).describe('Limit of one connection attempt.'),
    reconnect: reconnectSchema({ min_ms: 500, max_ms: 30_000 }),
    publish_timeout_ms: z.number().int().min(1).max(600_000).default(10_000).describe("How long a publish waits for the broker's confirm, and for a connection while the broker is down, before ServiceUnavailable; never past the calling service's time limit less 100 ms."),
    tls: tlsSchema.optional().describe('TLS settings (amqps): with them, a host/port connection uses TLS.'),
    allowed_services: allowedServicesField('publish on the connection'),
    ready_check: readyCheckField,
  })
  .strict();

export type AmqpConnectionEntry = z.infer<typeof amqpConnectionSchema>;

const bindingSchema = z
  .object({
    exchange: z.string().min(1).max(255).describe('Exchange to bind the queue to (it must exist).'),
    routing_key: z.string().max(255).default('').describe('Binding key (topic patterns with * and # on a topic exchange).'),
  })
  .strict();

const declareSchema = z
  .object({
    durable: z.boolean().default(true).describe('The queue survives a broker restart.'),
    arguments: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
      .default({})
      .describe('Queue arguments: x-queue-type (classic, quorum), x-dead-letter-exchange, x-dead-letter-routing-key, x-message-ttl, x-max-length…'),
    bindings: z.array(bindingSchema).default([]).describe('Bindings made at each (re)connect.'),
  })
  .strict();

export const channelAmqpSchema = z
  .object({
    name: z.string().min(1).describe('Unique; the Use queue lane and dead letters are amqp:<name>.'),
    connection: scopedRef(z.string().min(1), { to: ['amqp_connection'] }).describe('The amqp_connection to consume on.'),
    queue: z.string().min(1).max(255).describe('Queue to consume.'),
    declare: declareSchema.optional().describe('Declare the queue (and its bindings) at each connect with these settings; absent: the queue must exist already (checked passively).'),
    service: scopedRef(z.string().min(1), { to: ['services'] }).describe('Service each message runs.'),
    data_format: z.string().min(1).default('json').describe('How message bodies are decoded (json, xml, form, hl7, csv, none).'),
    ...formatSettingsFields,
    prefetch: z.number().int().min(1).max(65535).default(10).describe('Unacknowledged messages the broker sends at most.'),
    concurrency: z.number().int().min(1).max(1000).optional().describe('Messages whose service runs at once (at most prefetch); default prefetch.'),
    delivery: inboundDeliverySchema.default(inboundDeliverySchema.parse({})).describe('Use queue or in-place retries.'),
    dead_letter: z
      .enum(['svc', 'broker'])
      .default('svc')
      .describe("Where a message that failed for good goes: svc's dead-letter queue (svc queue list --channel amqp:NAME) with its reason, or rejected to the queue's x-dead-letter-exchange."),
    ready_check: z.boolean().default(false).describe('/ready answers 503 while this channel is not consuming.'),
  })
  .strict();

export type ChannelAmqpEntry = z.infer<typeof channelAmqpSchema>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    amqp_connection: AmqpConnectionEntry[];
    channel_amqp: ChannelAmqpEntry[];
  }
}

export const amqpConnectionSectionSchema = z.array(amqpConnectionSchema).default([]).describe('AMQP (RabbitMQ) broker connections: services publish on them, channel_amqp entries consume on them (plugins/connectors/amqp).').meta({ title: 'AMQP connections' });
export const channelAmqpSectionSchema = z.array(channelAmqpSchema).default([]).describe('Queues whose messages run a service (plugins/connectors/amqp).').meta({ title: 'AMQP channels' });

function uniqueNames(section: string, entries: Array<{ name: string }>, issues: ConfigIssue[]): void {
  const seen = new Map<string, number>();
  entries.forEach((e, i) => {
    const at = seen.get(e.name);
    if (at !== undefined) issues.push({ path: [section, i, 'name'], message: `duplicate name '${e.name}' (also ${section}[${at}])` });
    else seen.set(e.name, i);
  });
}

export function validateAmqp(config: SvcConfig, ctx: ValidationContext): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const connections = config.amqp_connection;
  const channels = config.channel_amqp;
  uniqueNames('amqp_connection', connections, issues);
  uniqueNames('channel_amqp', channels, issues);
  const secretNames = new Set(config.secrets.map((s) => s.name));
  connections.forEach((c, i) => {
    if (c.url === undefined && c.host === undefined) issues.push({ path: ['amqp_connection', i], message: 'give url or host' });
    if (c.url !== undefined && (c.host !== undefined || c.port !== undefined || c.username !== undefined || c.password !== undefined || c.password_secret !== undefined)) {
      issues.push({ path: ['amqp_connection', i, 'url'], message: 'give url, or host/port/username/password, not both' });
    }
    for (const p of passwordIssues(c, secretNames)) issues.push({ path: ['amqp_connection', i, ...p.path], message: p.message });
  });
  const names = new Set(connections.map((c) => c.name));
  const useQueueOn = bundledPluginOn(config, 'use-queue');
  channels.forEach((ch, i) => {
    const at = (key: string) => ['channel_amqp', i, key];
    if (!names.has(ch.connection)) issues.push({ path: at('connection'), message: `no amqp_connection named '${ch.connection}'` });
    if (!ctx.messageFormats.has(ch.data_format)) issues.push({ path: at('data_format'), message: `no enabled plugin decodes messages of data_format '${ch.data_format}' (${[...ctx.messageFormats].join(', ')})` });
    for (const { key, message } of formatSettingsIssues(ch)) issues.push({ path: at(key), message });
    if (ch.concurrency !== undefined && ch.concurrency > ch.prefetch) issues.push({ path: at('concurrency'), message: `must be at most prefetch (${ch.prefetch})` });
    if (ch.dead_letter === 'broker' && ch.declare !== undefined && ch.declare.arguments['x-dead-letter-exchange'] === undefined) {
      issues.push({ path: at('dead_letter'), message: "dead_letter: broker needs declare.arguments to name x-dead-letter-exchange (else the broker drops rejected messages)" });
    }
    if (!useQueueOn && (ch.delivery.use_queue || ch.dead_letter === 'svc')) {
      issues.push({ path: at('delivery'), message: "the use-queue plugin is off: it keeps svc's dead letters and delivery.use_queue; turn it on, or use dead_letter: broker without use_queue" });
    }
  });
  return issues;
}
