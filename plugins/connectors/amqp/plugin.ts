import { z } from 'zod';
import type { Logger } from 'pino';
import { definePlugin, type ConnectionReport, type KernelApi, type SvcConfig } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { AmqpConsumer } from './consumer.ts';
import { AmqpLink } from './link.ts';
import { publishHostCall, Publisher } from './publish.ts';
import { amqpConnectionSectionSchema, channelAmqpSectionSchema, validateAmqp, type AmqpConnectionEntry } from './schema.ts';

/**
 * One amqp_connection: a link for publishing (a confirm channel on it, opened at the first
 * publish, or at once with ready_check) and, when channels consume on it, a second link they
 * share, so that a broker blocking publishers under a memory alarm does not stall consumers.
 */
interface AmqpConnection {
  entry: AmqpConnectionEntry;
  publisher: Publisher;
  consumers: AmqpLink | undefined;
}

interface AmqpState {
  kernel: KernelApi;
  log: Logger;
  connections: Map<string, AmqpConnection>;
  consumers: Map<string, AmqpConsumer>;
  /** What each connection and channel was built from: unchanged ones keep their sockets. */
  builtFrom: Map<string, string>;
}

function consumerLink(state: AmqpState, conn: AmqpConnection): AmqpLink {
  conn.consumers ??= new AmqpLink(conn.entry, state.kernel, state.log);
  return conn.consumers;
}

async function retireConnection(conn: AmqpConnection): Promise<void> {
  await Promise.all([conn.publisher.link.close(), conn.consumers?.close()]);
}

async function onConfig(state: AmqpState, config: SvcConfig): Promise<void> {
  const connections = new Map<string, AmqpConnection>();
  const builtFrom = new Map<string, string>();
  for (const entry of config.amqp_connection) {
    const source = JSON.stringify(entry);
    const key = `connection ${entry.name}`;
    const current = state.connections.get(entry.name);
    const conn = current && state.builtFrom.get(key) === source ? current : { entry, publisher: new Publisher(new AmqpLink(entry, state.kernel, state.log)), consumers: undefined };
    if (entry.ready_check) conn.publisher.link.start();
    connections.set(entry.name, conn);
    builtFrom.set(key, source);
  }
  const consumers = new Map<string, AmqpConsumer>();
  const started: AmqpConsumer[] = [];
  for (const entry of config.channel_amqp) {
    const conn = connections.get(entry.connection);
    if (!conn) continue;
    const source = JSON.stringify([entry, conn.entry]);
    const key = `channel ${entry.name}`;
    const current = state.consumers.get(entry.name);
    const keep = current && state.builtFrom.get(key) === source && connections.get(entry.connection) === state.connections.get(entry.connection);
    const consumer = keep ? current : new AmqpConsumer(entry, consumerLink(state, conn), state.kernel, state.log);
    if (!keep) started.push(consumer);
    consumers.set(entry.name, consumer);
    builtFrom.set(key, source);
  }
  const retiredConsumers = [...state.consumers.values()].filter((c) => consumers.get(c.entry.name) !== c);
  const retiredConnections = [...state.connections.values()].filter((c) => connections.get(c.entry.name) !== c);
  state.connections = connections;
  state.consumers = consumers;
  state.builtFrom = builtFrom;
  // Old consumers settle before new ones start on the same queue, and connections close after their consumers.
  void (async () => {
    await Promise.all(retiredConsumers.map((c) => c.drain()));
    await Promise.all(retiredConnections.map(retireConnection));
    // A consumer link no channel uses any more closes too.
    for (const conn of connections.values()) {
      if (conn.consumers && ![...consumers.values()].some((c) => c.link === conn.consumers)) {
        const link = conn.consumers;
        conn.consumers = undefined;
        await link.close();
      }
    }
  })().catch((err: unknown) => state.log.warn({ err }, 'AMQP: retiring old connections failed'));
  for (const c of consumers.values()) c.declare();
  for (const c of started) c.begin();
}

function reports(state: AmqpState): ConnectionReport[] {
  const out: ConnectionReport[] = [];
  for (const conn of state.connections.values()) {
    const link = conn.publisher.link;
    const r: ConnectionReport = { kind: 'amqp', name: conn.entry.name, role: 'connection', state: link.state, readyCheck: conn.entry.ready_check, meter: link.meter };
    if (link.state !== 'up' && link.reason !== undefined) r.reason = link.reason;
    out.push(r);
  }
  for (const c of state.consumers.values()) {
    const r: ConnectionReport = { kind: 'amqp', name: c.entry.name, role: 'channel', state: c.state, readyCheck: c.entry.ready_check, meter: c.meter };
    const reason = c.state === 'up' ? undefined : (c.reason ?? c.link.reason);
    if (reason !== undefined) r.reason = reason;
    out.push(r);
  }
  return out;
}

/** AMQP (RabbitMQ): services publish with confirms (`amqp(name).publish`), channel_amqp queues run services. See README.md. */
export default definePlugin<Record<string, never>, AmqpState>({
  name: 'amqp',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.17.0',
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { amqp_connection: amqpConnectionSectionSchema, channel_amqp: channelAmqpSectionSchema },
    validateConfig: validateAmqp,
  },
  setup(kernel) {
    const log = kernel.log.child({ plugin: 'amqp' });
    const state: AmqpState = { kernel, log, connections: new Map(), consumers: new Map(), builtFrom: new Map() };
    kernel.addHostCall(publishHostCall((name) => state.connections.get(name)?.publisher));
    kernel.addConnections(() => reports(state));
    kernel.onDrain(async () => {
      await Promise.all([...state.consumers.values()].map((c) => c.drain()));
    });
    return state;
  },
  onConfig,
  async stop(state) {
    await Promise.all([...state.consumers.values()].map((c) => c.drain()));
    await Promise.all([...state.connections.values()].map(retireConnection));
  },
  hooks: {},
});
