import { z } from 'zod';
import { definePlugin, type ConnectionReport, type KernelApi, type SvcConfig } from '../../../sdk/plugin/index.ts';
import { BrokerLink, defaultClientId } from './client.ts';
import { MqttChannel } from './channel.ts';
import { publishHostCall, type PublishConnection } from './publish.ts';
import { channelSectionSchema, connectionSectionSchema, validateMqtt } from './schema.ts';

interface MqttState {
  kernel: KernelApi;
  connections: Map<string, PublishConnection>;
  channels: Map<string, MqttChannel>;
  /** What each connection or channel was built from: one whose entry did not change keeps its client. */
  builtFrom: Map<string, string>;
  draining: boolean;
}

function report(kind: 'connection' | 'channel', link: BrokerLink, readyCheck: boolean): ConnectionReport {
  const r: ConnectionReport = { kind: 'mqtt', name: link.entry.name, role: kind, state: link.state, readyCheck, meter: link.meter };
  if (link.state !== 'up' && link.reason !== undefined) r.reason = link.reason;
  return r;
}

async function openConnection(state: MqttState, entry: PublishConnection['entry']): Promise<PublishConnection> {
  const link = new BrokerLink(entry, state.kernel, state.kernel.log.child({ plugin: 'mqtt', connection: entry.name }));
  await link.open({ clean: true }, entry.client_id ?? defaultClientId(state.kernel, entry.name));
  return { entry, link };
}

/** Opens what is new or changed, closes what went away or changed; the rest keeps its client. */
async function onConfig(state: MqttState, config: SvcConfig): Promise<void> {
  if (state.draining) return;
  const builtFrom = new Map<string, string>();
  const nextConnections = new Map<string, PublishConnection>();
  for (const entry of config.mqtt_connection ?? []) {
    const key = `c:${entry.name}`;
    const source = JSON.stringify(entry);
    const current = state.connections.get(entry.name);
    nextConnections.set(entry.name, current && state.builtFrom.get(key) === source ? current : await openConnection(state, entry));
    builtFrom.set(key, source);
  }
  const nextChannels = new Map<string, MqttChannel>();
  for (const entry of config.channel_mqtt ?? []) {
    const key = `ch:${entry.name}`;
    const source = JSON.stringify(entry);
    const current = state.channels.get(entry.name);
    if (current && state.builtFrom.get(key) === source) {
      current.pipeline.declare();
      nextChannels.set(entry.name, current);
    } else {
      // The old client goes first: a new one with the same client id would be dropped by the broker for it.
      if (current) await current.drain();
      const channel = new MqttChannel(entry, state.kernel, current?.entry.topics);
      await channel.start();
      nextChannels.set(entry.name, channel);
    }
    builtFrom.set(key, source);
  }
  // Changed channels were drained above; drain() is idempotent, so this ends those removed.
  const retiredChannels = [...state.channels.values()].filter((c) => nextChannels.get(c.entry.name) !== c);
  const retired = [...state.connections.values()].filter((c) => nextConnections.get(c.entry.name) !== c);
  state.connections = nextConnections;
  state.channels = nextChannels;
  state.builtFrom = builtFrom;
  await Promise.all([...retired.map((c) => c.link.close()), ...retiredChannels.map((c) => c.drain())]);
}

/**
 * MQTT connector: services publish through named connections (`mqtt(name).publish` in the SDK),
 * and `channel_mqtt` subscriptions run a service for each message, acknowledged only once it is
 * done with. Costs nothing without config entries: no client is opened. See README.md.
 */
export default definePlugin<Record<string, never>, MqttState>({
  name: 'mqtt',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.17.0',
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { mqtt_connection: connectionSectionSchema, channel_mqtt: channelSectionSchema },
    validateConfig: validateMqtt,
  },
  setup(kernel) {
    const state: MqttState = { kernel, connections: new Map(), channels: new Map(), builtFrom: new Map(), draining: false };
    kernel.addHostCall(publishHostCall(() => state.connections));
    kernel.addConnections(() => [
      ...[...state.connections.values()].map((c) => report('connection', c.link, c.entry.ready_check)),
      ...[...state.channels.values()].map((c) => report('channel', c.link, c.entry.ready_check)),
    ]);
    kernel.onDrain(async () => {
      state.draining = true;
      await Promise.all([...state.channels.values()].map((c) => c.drain()));
    });
    return state;
  },
  onConfig,
  async stop(state) {
    state.draining = true;
    await Promise.all([...state.channels.values()].map((c) => c.drain()));
    await Promise.all([...state.connections.values()].map((c) => c.link.close()));
  },
  hooks: {},
});
