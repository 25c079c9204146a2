import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type * as Mqtt from 'mqtt';
import type { IClientOptions, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import { ConnectionMeter, onFirstUse, type KernelApi } from '../../../sdk/plugin/index.ts';
import { resolvePassword } from '../shared/credentials.ts';
import type { BrokerEntry } from './schema.ts';

/** The client library, loaded by the first connection. */
const mqttClient = onFirstUse<typeof Mqtt>(import.meta.url, 'mqtt');

/** Durations of connector operations, on the monotonic clock. */
export const monotonic = { now: () => performance.now() };

/** The default client id: stable across starts of this installation (its data directory), different on another. */
export function defaultClientId(kernel: Pick<KernelApi, 'dataDir'>, name: string): string {
  const install = createHash('sha256').update(kernel.dataDir).digest('hex').slice(0, 8);
  return `svc-${name.replace(/[^\x21-\x7e]/g, '_').slice(0, 100)}-${install}`;
}

/** A short reason safe to show anyone: no address, no credentials. */
export function safeReason(err: unknown): string {
  const e = err as { code?: unknown; message?: string };
  if (typeof e?.code === 'number') return `refused by the broker (reason code ${e.code})`;
  if (typeof e?.code === 'string' && /^E[A-Z]+$/.test(e.code)) return `network error ${e.code}`;
  if (/not authori[sz]ed|bad user ?name or password/i.test(e?.message ?? '')) return 'refused by the broker: not authorized';
  if (/timeout/i.test(e?.message ?? '')) return 'connect timeout';
  return 'connection failed';
}

export type LinkState = 'connecting' | 'up' | 'down';

/**
 * One MQTT client and what the health report needs of it: its state, why it is down, its meter.
 * mqtt.js reconnects by itself; the wait grows from reconnect.min_ms to max_ms while attempts fail.
 */
export class BrokerLink {
  readonly meter = new ConnectionMeter(monotonic);
  state: LinkState = 'connecting';
  reason: string | undefined;
  client: MqttClient | undefined;
  private everUp = false;
  private closed = false;

  constructor(
    readonly entry: BrokerEntry,
    private readonly kernel: KernelApi,
    readonly log: Logger,
  ) {}

  /** Opens the client (its first connect runs in the background). */
  async open(extra: Partial<IClientOptions>, clientId: string): Promise<MqttClient> {
    const e = this.entry;
    const password = await resolvePassword(this.kernel, e).catch((err: Error) => {
      this.log.error({ name: e.name }, `mqtt: ${err.message}`);
      this.reason = 'password secret missing';
      return undefined;
    });
    const options: IClientOptions = {
      clientId,
      protocolVersion: e.protocol_version,
      keepalive: e.keepalive_s,
      connectTimeout: e.connect_timeout_ms,
      reconnectPeriod: e.reconnect.min_ms,
      queueQoSZero: false,
      resubscribe: false,
      ...extra,
    };
    if (e.username !== undefined) options.username = e.username;
    if (password !== undefined) options.password = password;
    if (e.tls) {
      options.rejectUnauthorized = e.tls.reject_unauthorized;
      if (e.tls.ca_file) options.ca = readFileSync(e.tls.ca_file);
      if (e.tls.cert_file) options.cert = readFileSync(e.tls.cert_file);
      if (e.tls.key_file) options.key = readFileSync(e.tls.key_file);
      if (e.tls.server_name) options.servername = e.tls.server_name;
    }
    const client = mqttClient().connect(e.url, options);
    this.client = client;
    client.on('connect', () => {
      if (this.everUp) this.meter.reconnects++;
      this.everUp = true;
      this.state = 'up';
      this.reason = undefined;
      client.options.reconnectPeriod = e.reconnect.min_ms;
    });
    client.on('reconnect', () => {
      this.state = 'connecting';
      // Backoff: each attempt that follows a failed one waits twice as long, up to max_ms.
      client.options.reconnectPeriod = Math.min(e.reconnect.max_ms, (client.options.reconnectPeriod ?? e.reconnect.min_ms) * 2);
    });
    client.on('close', () => {
      if (this.closed) return;
      if (this.state === 'up') this.log.warn({ name: e.name }, 'mqtt: connection lost; reconnecting');
      this.state = this.everUp ? 'connecting' : 'down';
      this.reason ??= 'not connected';
    });
    client.on('offline', () => {
      this.state = 'down';
    });
    client.on('error', (err) => {
      this.reason = safeReason(err);
      this.log.warn({ name: e.name, reason: this.reason }, 'mqtt: broker connection error');
    });
    return client;
  }

  /** Ends the client now: what was not acknowledged stays the broker's to deliver again. */
  async close(): Promise<void> {
    const client = this.client;
    if (!client || this.closed) return;
    this.closed = true;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2_000);
      client.end(true, {}, () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
