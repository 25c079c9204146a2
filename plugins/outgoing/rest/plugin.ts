import { z } from 'zod';
import { definePlugin, type KernelApi, type SecurityEntry, type SvcConfig } from '../../../sdk/plugin/index.ts';
import { OUTGOING_AUTH_CAPABILITY } from '../../capabilities.ts';
import { outgoingHostCall, type Connection } from './call.ts';
import { outgoingSectionSchema, validateOutgoing, type OutgoingEntry } from './schema.ts';
import { CallCounts } from './stats.ts';
import { HttpTransport } from './transport.ts';
import { pathBuilder } from './url.ts';

interface OutgoingState {
  kernel: KernelApi;
  connections: Map<string, Connection>;
  /** What each connection was built from, to keep its pool when config changes elsewhere. */
  builtFrom: Map<string, string>;
}

function build(entry: OutgoingEntry, definition: SecurityEntry | undefined, kernel: KernelApi): Connection {
  const conn: Connection = { entry, transport: new HttpTransport(entry), buildPath: pathBuilder(entry.address, entry.url_path), auth: undefined, unusable: undefined };
  if (definition) {
    const capability = OUTGOING_AUTH_CAPABILITY[definition.type as keyof typeof OUTGOING_AUTH_CAPABILITY];
    const factory = capability && kernel.lookup(capability);
    if (!factory) conn.unusable = `no enabled plugin adds ${definition.type} credentials to outgoing calls`;
    else {
      try {
        conn.auth = factory(definition);
      } catch (err) {
        conn.unusable = (err as Error).message;
      }
    }
    if (conn.unusable) kernel.log.error({ connection: entry.name, security: definition.name }, `outgoing connection cannot be used: ${conn.unusable}`);
  }
  return conn;
}

/**
 * Rebuilds the connections whose entry or security definition changed; the others keep their
 * pools (and sockets). A replaced connection's pool closes once its calls in flight finish.
 */
async function onConfig(state: OutgoingState, config: SvcConfig): Promise<void> {
  const next = new Map<string, Connection>();
  const builtFrom = new Map<string, string>();
  for (const entry of config.outgoing_rest) {
    const definition = entry.security === undefined ? undefined : config.security.find((s) => s.name === entry.security);
    const source = JSON.stringify([entry, definition]);
    const current = state.connections.get(entry.name);
    next.set(entry.name, current && state.builtFrom.get(entry.name) === source ? current : build(entry, definition, state.kernel));
    builtFrom.set(entry.name, source);
  }
  const retired = [...state.connections.values()].filter((c) => next.get(c.entry.name) !== c);
  state.connections = next;
  state.builtFrom = builtFrom;
  for (const conn of retired) void retire(conn, state.kernel);
}

async function retire(conn: Connection, kernel: KernelApi): Promise<void> {
  try {
    await conn.transport.close();
    await conn.auth?.close?.();
  } catch (err) {
    kernel.log.warn({ err, connection: conn.entry.name }, 'closing a retired outgoing connection failed');
  }
}

/** Outgoing REST connections (spec D): services call external systems by connection name. See README.md. */
export default definePlugin<Record<string, never>, OutgoingState>({
  name: 'outgoing-rest',
  kind: 'outgoing',
  version: '1.0.0',
  sdk: '^1.17.0',
  provides: ['outgoing-rest.stats'],
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { outgoing_rest: outgoingSectionSchema },
    validateConfig: validateOutgoing,
  },
  setup(kernel) {
    const state: OutgoingState = { kernel, connections: new Map(), builtFrom: new Map() };
    const counts = new CallCounts();
    // Tracing is looked up per call, not here: the tracing plugin may be set up after this one, or not enabled.
    kernel.addHostCall(outgoingHostCall(() => state.connections, kernel.clock, counts, () => kernel.lookup('observe.tracing')));
    kernel.provide('outgoing-rest.stats', () => counts.stats());
    return state;
  },
  onConfig,
  async stop(state) {
    await Promise.all([...state.connections.values()].map((c) => retire(c, state.kernel)));
  },
  hooks: {},
});
