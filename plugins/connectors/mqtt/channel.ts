import type { IPublishPacket, MqttClient } from 'mqtt';
import type { KernelApi } from '../../../sdk/plugin/index.ts';
import { formatSettingsOf } from '../shared/fields.ts';
import { InboundPipeline, type InboundMessage } from '../shared/inbound.ts';
import { BrokerLink, defaultClientId } from './client.ts';
import type { MqttChannelEntry } from './schema.ts';

/** How long shutdown waits for the message in hand to settle before the client ends anyway. */
const DRAIN_WAIT_MS = 10_000;

/** The service's ctx.headers of one message: its topic and flags, and its MQTT 5 properties. */
export function messageHeaders(packet: IPublishPacket): Record<string, string> {
  const headers: Record<string, string> = { 'mqtt-topic': packet.topic, 'mqtt-qos': String(packet.qos), 'mqtt-retain': String(packet.retain), 'mqtt-dup': String(packet.dup) };
  const p = packet.properties;
  if (!p) return headers;
  if (p.contentType !== undefined) headers['content-type'] = p.contentType;
  if (p.correlationData !== undefined) headers['mqtt-correlation-data'] = Buffer.from(p.correlationData).toString('base64');
  if (p.responseTopic !== undefined) headers['mqtt-response-topic'] = p.responseTopic;
  for (const [name, value] of Object.entries(p.userProperties ?? {})) {
    const key = name.toLowerCase();
    if (key in headers) continue;
    headers[key] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return headers;
}

/**
 * One `channel_mqtt` entry: its own client, so its own persistent session (client_id) at the
 * broker. Messages are taken one at a time: mqtt.js sends the PUBACK (QoS 1) only when
 * handleMessage calls back, and the PUBREC (QoS 2, MQTT 5) only when customHandleAcks does, so
 * neither goes out before the pipeline is done with the message (run, queued or dead-lettered).
 * A message the pipeline hands back is never acknowledged: the socket is dropped, and the broker
 * delivers it again in the session once the client is back.
 */
export class MqttChannel {
  readonly link: BrokerLink;
  readonly pipeline: InboundPipeline;
  private readonly stop = new AbortController();
  private inFlight: Promise<void> | undefined;
  private stopping = false;
  private drained: Promise<void> | undefined;

  /** Whether this instance subscribed yet: its first connect applies the config's topics to a kept session. */
  private subscribed = false;

  constructor(
    readonly entry: MqttChannelEntry,
    private readonly kernel: KernelApi,
    /** The topics of the entry this one replaces (a config change): those dropped are unsubscribed. */
    private readonly previousTopics: readonly string[] = [],
  ) {
    const log = kernel.log.child({ plugin: 'mqtt', channel: entry.name });
    this.link = new BrokerLink(entry, kernel, log);
    this.pipeline = new InboundPipeline(
      { source: 'mqtt', name: entry.name, service: entry.service, data_format: entry.data_format, formatSettings: formatSettingsOf(entry), delivery: entry.delivery, deadLetter: 'svc' },
      { kernel, meter: this.link.meter, log, stop: this.stop.signal },
    );
  }

  async start(): Promise<void> {
    const e = this.entry;
    this.pipeline.declare();
    const v5 = e.protocol_version === 5;
    const client = await this.link.open(
      {
        clean: e.clean_session,
        ...(v5 && !e.clean_session ? { properties: { sessionExpiryInterval: e.session_expiry_s } } : {}),
        // MQTT 5, QoS 2: the PUBREC waits for the pipeline; QoS 0 and 1 go on to handleMessage.
        ...(v5 ? { customHandleAcks: (_topic: string, _message: Buffer, packet: IPublishPacket, done: (code: number) => void) => (packet.qos === 2 ? this.take(client, packet, () => done(0)) : done(0)) } : {}),
      },
      e.client_id ?? defaultClientId(this.kernel, e.name),
    );
    client.handleMessage = (packet, callback) => {
      // QoS 2 was handled before its PUBREC; what reaches here after the PUBREL is done with.
      if (packet.cmd !== 'publish' || packet.qos === 2) return callback();
      this.take(client, packet, () => callback());
    };
    const dropped = this.previousTopics.filter((t) => !e.topics.includes(t));
    client.on('connect', (connack) => {
      // A session the broker kept has the subscriptions, and on MQTT 3.1.1 subscribing again would
      // resend retained messages: only the first connect after a config change (any first connect
      // on MQTT 5, whose retain handling 1 resends nothing) subscribes to a kept session.
      const kept = connack.sessionPresent && !e.clean_session;
      if (kept && (this.subscribed || (!v5 && this.previousTopics.length === 0))) return;
      if (dropped.length) client.unsubscribe(dropped);
      client.subscribe(e.topics, { qos: e.qos, ...(v5 ? { rh: 1 } : {}) }, (err, granted) => {
        if (err) this.link.log.error({ reason: err.message }, 'mqtt: subscribe failed');
        else if (granted?.some((g) => g.qos >= 128)) this.link.log.error({ refused: granted.filter((g) => g.qos >= 128).map((g) => g.topic) }, 'mqtt: the broker refused a subscription');
        else this.subscribed = true;
      });
    });
  }

  /** Runs one message through the pipeline; `ack` only when it is done with it. */
  private take(client: MqttClient, packet: IPublishPacket, ack: () => void): void {
    if (this.stopping) return;
    const message: InboundMessage = { body: Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload), headers: messageHeaders(packet), at: new Date(this.kernel.clock.now()).toISOString() };
    const stream = client.stream;
    // mqtt.js reads no packet while one waits for its acknowledgement, PINGRESP included: keep the
    // connection alive ourselves, or a service (with its retries) longer than 1.5 x keepalive_s would drop it.
    const heartbeat = setInterval(() => {
      if (client.stream !== stream || !client.connected) return;
      client.sendPing();
      client.reschedulePing(true);
    }, this.entry.keepalive_s * 500);
    heartbeat.unref();
    this.inFlight = this.pipeline.handle(message).then((d) => {
      clearInterval(heartbeat);
      // Lost meanwhile: an acknowledgement now would be queued for the next connection; the broker sends the message again there.
      if (client.stream !== stream || !client.connected) return;
      if (d.action === 'ack' || packet.qos === 0) return ack();
      // Not done with: leave it unacknowledged, and drop the connection so the broker sends it again.
      this.link.log.warn({ why: d.why }, 'mqtt: message handed back; reconnecting so the broker delivers it again');
      if (!this.stopping) client.stream?.destroy();
    });
  }

  /** Shutdown: stop taking, end the wait between attempts, wait (bounded) for the message in hand, then end the client. */
  drain(): Promise<void> {
    this.drained ??= this.end();
    return this.drained;
  }

  private async end(): Promise<void> {
    this.stopping = true;
    this.stop.abort();
    if (this.inFlight) await Promise.race([this.inFlight, new Promise((r) => setTimeout(r, DRAIN_WAIT_MS).unref())]);
    await this.link.close();
  }
}
