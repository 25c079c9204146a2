import { z } from 'zod';
import { bundledPluginOn, type ConfigIssue, type SvcConfig, type ValidationContext, hostPath, listColumn, scopedRef } from '../../../sdk/plugin/index.ts';
import { inboundDeliverySchema } from '../shared/inbound.ts';
import { passwordFields, passwordIssues } from '../shared/credentials.ts';
import { allowedServicesField, formatSettingsFields, formatSettingsIssues, readyCheckField, reconnectSchema } from '../shared/fields.ts';

/** Longest topic or filter the protocol allows, in UTF-8 bytes. */
export const MAX_TOPIC_BYTES = 65_535;

/** Why a topic filter breaks the MQTT rules, or undefined when it is valid (MQTT 3.1.1 §4.7, 5.0 §4.7-4.8). */
export function topicFilterProblem(filter: string): string | undefined {
  if (filter === '') return 'must not be empty';
  if (Buffer.byteLength(filter) > MAX_TOPIC_BYTES) return `must be at most ${MAX_TOPIC_BYTES} bytes`;
  if (filter.includes('\u0000')) return 'must not contain the null character';
  let levels = filter.split('/');
  if (levels[0] === '$share') {
    if (levels.length < 3 || !levels[1] || /[+#]/.test(levels[1])) return '$share/<group>/<filter>: the group must be non-empty and hold no + or #';
    levels = levels.slice(2);
    if (levels.join('/') === '') return '$share/<group>/<filter>: the filter must not be empty';
  }
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i] as string;
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1)) return "'#' must be a whole level, and the last";
    if (level.includes('+') && level !== '+') return "'+' must be a whole level";
  }
  return undefined;
}

/** Why a topic cannot be published to, or undefined (no wildcards, not empty, at most 65535 bytes). */
export function topicNameProblem(topic: string): string | undefined {
  if (topic === '') return 'must not be empty';
  if (Buffer.byteLength(topic) > MAX_TOPIC_BYTES) return `must be at most ${MAX_TOPIC_BYTES} bytes`;
  if (/[+#\u0000]/.test(topic)) return 'must not contain wildcards (+, #) or the null character';
  return undefined;
}

const urlSchema = z.string().refine((a) => {
  try {
    const u = new URL(a);
    return ['mqtt:', 'mqtts:', 'ws:', 'wss:'].includes(u.protocol) && !u.username && !u.password && u.hostname !== '';
  } catch {
    return false;
  }
}, 'must be an mqtt://, mqtts://, ws:// or wss:// address without credentials (give username and password)');

const tlsSchema = z
  .object({
    reject_unauthorized: z.boolean().default(true).describe('Refuse brokers whose certificate does not verify; false only for test systems.'),
    ca_file: hostPath(z.string().min(1)).optional().describe('PEM file of extra certificate authorities to trust.'),
    cert_file: hostPath(z.string().min(1)).optional().describe('PEM client certificate, for brokers that authenticate clients by certificate.'),
    key_file: hostPath(z.string().min(1)).optional().describe('PEM private key of cert_file.'),
    server_name: z.string().min(1).optional().describe('Name to verify the certificate against, when it differs from the address host.'),
  })
  .strict();

const clientIdSchema = z.string().min(1).max(128).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces');

/** What a connection and a channel share: how to reach the broker and who to be there. */
const brokerFields = {
  url: urlSchema.describe('The broker: mqtt://host:1883, mqtts://host:8883, ws://host/mqtt or wss://host/mqtt.'),
  username: z.string().min(1).max(1024).optional().describe('User name at the broker.'),
  ...passwordFields,
  protocol_version: z.union([z.literal(4), z.literal(5)]).default(4).describe('4 = MQTT 3.1.1, 5 = MQTT 5 (message properties, session expiry).'),
  client_id: clientIdSchema.optional().describe('Client identifier at the broker; default svc-<name>-<8 hex of this installation>, the same at every start.'),
  keepalive_s: z.number().int().min(5).max(65_535).default(60).describe('Seconds between pings while nothing else is sent; a broker silent for 1.5 times this is taken as gone.'),
  connect_timeout_ms: z.number().int().min(100).max(300_000).default(10_000).describe('Longest wait for the broker to accept a connection attempt.'),
  reconnect: reconnectSchema({ min_ms: 1_000, max_ms: 30_000 }),
  tls: tlsSchema.optional().describe('TLS settings of an mqtts:// or wss:// address.'),
  ready_check: readyCheckField,
};

export const connectionEntrySchema = z
  .object({
    name: z.string().min(1).describe('Unique; services publish through it by this name: mqtt(name).publish(...).'),
    ...brokerFields,
    publish_timeout_ms: z.number().int().min(100).max(300_000).default(5_000).describe('Longest a publish waits for the connection (broker down or reconnecting) and then for its QoS handshake, before the service gets ServiceUnavailable; never past the calling service\'s time limit less 100 ms.'),
    max_message_bytes: z.number().int().min(1).max(256 * 1024 * 1024).default(1024 * 1024).describe('Largest message a service may publish, in bytes; larger is BadRequest.'),
    allowed_services: allowedServicesField('publish through it'),
  })
  .strict();


export const channelEntrySchema = z
  .object({
    name: z.string().min(1).describe('Unique; the service reads it as ctx.delivery.source.name, dead letters are under mqtt:<name>.'),
    ...brokerFields,
    client_id: clientIdSchema.optional().describe("The channel's client identifier: the key of its persistent session at the broker. Default svc-<channel>-<8 hex of this installation>, the same at every start; change it and the session (and what it holds) is left behind."),
    topics: listColumn(
      z.array(
        z.string().superRefine((f, ctx) => {
          const problem = topicFilterProblem(f);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }),
      ),
      1,
      'Topics',
    )
      .min(1)
      .describe('Topic filters to subscribe to: + matches one level, # (last) any number of levels, $share/<group>/<filter> shares the messages among the clients of the group.'),
    qos: z.union([z.literal(0), z.literal(1), z.literal(2)]).default(1).describe('Subscription QoS: 0 at most once (nothing redelivered), 1 at least once (acknowledged after the message is done with), 2 needs protocol_version 5.'),
    clean_session: z.boolean().default(false).describe('false: a persistent session, so messages published while svc is away are delivered when it is back; true: a new session at each connect.'),
    session_expiry_s: z.number().int().min(0).max(4_294_967_295).default(604_800).describe('MQTT 5: how long the broker keeps the session after a disconnect (default a week).'),
    service: listColumn(scopedRef(z.string().min(1), { to: ['services'] }), 2, 'Service').describe('The service run for each message.'),
    data_format: listColumn(z.string().min(1), 3, 'Data format').default('json').describe("How a message's body is read: json (default), xml, form, hl7, csv, or none (the bytes as they came, in ctx.rawBody); a message not valid for it is dead-lettered."),
    ...formatSettingsFields,
    delivery: inboundDeliverySchema.default(inboundDeliverySchema.parse({})).describe('Retries and dead letters (svc\'s dead-letter queue: svc queue list --channel mqtt:<name>).'),
  })
  .strict();

export type MqttConnectionEntry = z.infer<typeof connectionEntrySchema>;
export type MqttChannelEntry = z.infer<typeof channelEntrySchema>;
export type BrokerEntry = Pick<MqttConnectionEntry, 'name' | 'url' | 'username' | 'password' | 'password_secret' | 'protocol_version' | 'client_id' | 'keepalive_s' | 'connect_timeout_ms' | 'reconnect' | 'tls'>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    mqtt_connection: MqttConnectionEntry[];
    channel_mqtt: MqttChannelEntry[];
  }
}

export const connectionSectionSchema = z.array(connectionEntrySchema).default([]).describe('MQTT broker connections services publish through (mqtt(name).publish in the SDK).').meta({ title: 'MQTT connections' });
export const channelSectionSchema = z.array(channelEntrySchema).default([]).describe('MQTT subscriptions that run a service for each message (an event source, at least once with QoS 1).').meta({ title: 'MQTT channels' });

function brokerIssues(section: string, entry: BrokerEntry, i: number, secrets: ReadonlySet<string>): ConfigIssue[] {
  const issues: ConfigIssue[] = passwordIssues(entry, secrets).map((p) => ({ path: [section, i, ...p.path], message: p.message }));
  if (entry.tls !== undefined && !/^(mqtts|wss):/.test(entry.url)) issues.push({ path: [section, i, 'tls'], message: 'tls settings apply only to an mqtts:// or wss:// address' });
  return issues;
}

function duplicates(section: string, names: string[]): ConfigIssue[] {
  const seen = new Map<string, number>();
  const issues: ConfigIssue[] = [];
  names.forEach((name, i) => {
    const at = seen.get(name);
    if (at !== undefined) issues.push({ path: [section, i, 'name'], message: `duplicate name '${name}' (also ${section}[${at}])` });
    else seen.set(name, i);
  });
  return issues;
}

export function validateMqtt(config: SvcConfig, ctx: ValidationContext): ConfigIssue[] {
  const secrets = new Set(((config as { secrets?: Array<{ name: string }> }).secrets ?? []).map((s) => s.name));
  const connections = config.mqtt_connection ?? [];
  const channels = config.channel_mqtt ?? [];
  const issues = [...duplicates('mqtt_connection', connections.map((c) => c.name)), ...duplicates('channel_mqtt', channels.map((c) => c.name))];
  connections.forEach((c, i) => issues.push(...brokerIssues('mqtt_connection', c, i, secrets)));
  channels.forEach((c, i) => {
    issues.push(...brokerIssues('channel_mqtt', c, i, secrets));
    if (!ctx.messageFormats.has(c.data_format)) issues.push({ path: ['channel_mqtt', i, 'data_format'], message: `no enabled plugin decodes messages of format '${c.data_format}' (${[...ctx.messageFormats].join(', ')})` });
    for (const { key, message } of formatSettingsIssues(c)) issues.push({ path: ['channel_mqtt', i, key], message });
    if (c.qos === 2 && c.protocol_version !== 5) issues.push({ path: ['channel_mqtt', i, 'qos'], message: 'qos 2 needs protocol_version 5 (its PUBREC can wait for the service only in MQTT 5)' });
  });
  if (channels.length && !bundledPluginOn(config, 'use-queue')) issues.push({ path: ['channel_mqtt'], message: 'MQTT channels keep dead letters in the Use queue: turn plugins.use-queue on' });
  const ids = new Map<string, string>();
  for (const c of channels) {
    if (c.client_id === undefined) continue;
    const other = ids.get(c.client_id);
    if (other !== undefined) issues.push({ path: ['channel_mqtt', channels.indexOf(c), 'client_id'], message: `client_id also used by channel '${other}': the broker would drop one for the other` });
    else ids.set(c.client_id, c.name);
  }
  return issues;
}
