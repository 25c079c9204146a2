import { z } from 'zod';
import { definePlugin, type KernelApi, type SvcConfig } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { SqlConnection } from './connection.ts';
import { sqlHostCalls } from './host-calls.ts';
import { sqlSectionSchema, validateSql } from './schema.ts';

interface SqlState {
  kernel: KernelApi;
  connections: Map<string, SqlConnection>;
  /** What each connection was built from, to keep its pool when config changes elsewhere. */
  builtFrom: Map<string, string>;
}

/** Rebuilds only the connections whose entry changed; a replaced pool drains (calls in flight finish) and closes. */
function onConfig(state: SqlState, config: SvcConfig): void {
  const next = new Map<string, SqlConnection>();
  const builtFrom = new Map<string, string>();
  for (const entry of config.sql_connection) {
    const source = JSON.stringify(entry);
    const current = state.connections.get(entry.name);
    const conn = current && state.builtFrom.get(entry.name) === source ? current : new SqlConnection(entry, state.kernel);
    if (conn !== current && entry.ready_check) void conn.probe();
    next.set(entry.name, conn);
    builtFrom.set(entry.name, source);
  }
  const retired = [...state.connections.values()].filter((c) => next.get(c.entry.name) !== c);
  state.connections = next;
  state.builtFrom = builtFrom;
  for (const conn of retired) void retire(conn, state.kernel);
}

async function retire(conn: SqlConnection, kernel: KernelApi): Promise<void> {
  try {
    await conn.close();
  } catch (err) {
    kernel.log.warn({ plugin: 'sql', connection: conn.entry.name, err }, 'closing a retired SQL connection failed');
  }
}

/** SQL databases (PostgreSQL with pg, MySQL and MariaDB with mysql2) services query by connection name. See README.md. */
export default definePlugin<Record<string, never>, SqlState>({
  name: 'sql',
  kind: 'outgoing',
  version: '1.0.0',
  sdk: '^1.8.0',
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { sql_connection: sqlSectionSchema },
    validateConfig: validateSql,
  },
  setup(kernel) {
    const state: SqlState = { kernel, connections: new Map(), builtFrom: new Map() };
    for (const call of sqlHostCalls(() => state.connections)) kernel.addHostCall(call);
    kernel.addConnections(() => [...state.connections.values()].map((c) => c.report()));
    return state;
  },
  onConfig,
  async stop(state) {
    await Promise.all([...state.connections.values()].map((c) => retire(c, state.kernel)));
  },
  hooks: {},
});
