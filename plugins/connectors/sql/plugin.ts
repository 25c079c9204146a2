import { z } from 'zod';
import { definePlugin, type KernelApi, type SvcConfig } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { BuiltByName } from '../shared/built.ts';
import { SqlConnection } from './connection.ts';
import { sqlHostCalls } from './host-calls.ts';
import { sqlSectionSchema, validateSql } from './schema.ts';

interface SqlState {
  kernel: KernelApi;
  /** An unchanged entry keeps its pool when the config changes elsewhere. */
  connections: BuiltByName<SqlConnection>;
}

/** Rebuilds only the connections whose entry changed; a replaced pool drains (calls in flight finish) and closes. */
function onConfig(state: SqlState, config: SvcConfig): void {
  const { built, retired } = state.connections.sync(config.sql_connection, (entry) => new SqlConnection(entry, state.kernel));
  for (const conn of built) if (conn.entry.ready_check) void conn.probe();
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
  sdk: '^1.17.0',
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { sql_connection: sqlSectionSchema },
    validateConfig: validateSql,
  },
  setup(kernel) {
    const state: SqlState = { kernel, connections: new BuiltByName() };
    for (const call of sqlHostCalls((name) => state.connections.get(name))) kernel.addHostCall(call);
    kernel.addConnections(() => [...state.connections.values()].map((c) => c.report()));
    return state;
  },
  onConfig,
  async stop(state) {
    await Promise.all([...state.connections.values()].map((c) => retire(c, state.kernel)));
  },
  hooks: {},
});
