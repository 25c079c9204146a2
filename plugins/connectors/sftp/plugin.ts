import { z } from 'zod';
import { definePlugin, type KernelApi, type SvcConfig } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { SftpConnection } from './connection.ts';
import { sftpFolders } from './folders.ts';
import { sftpHostCalls } from './host-calls.ts';
import { sftpSectionSchema, validateSftp } from './schema.ts';

interface SftpState {
  kernel: KernelApi;
  connections: Map<string, SftpConnection>;
  /** What each connection was built from, to keep its sessions when config changes elsewhere. */
  builtFrom: Map<string, string>;
}

/** Rebuilds only the connections whose entry changed; a replaced one closes its sessions as calls give them back. */
function onConfig(state: SftpState, config: SvcConfig): void {
  const next = new Map<string, SftpConnection>();
  const builtFrom = new Map<string, string>();
  for (const entry of config.sftp_connection) {
    const source = JSON.stringify(entry);
    const current = state.connections.get(entry.name);
    const conn = current && state.builtFrom.get(entry.name) === source ? current : new SftpConnection(entry, state.kernel);
    if (conn !== current && entry.ready_check) void conn.probe();
    next.set(entry.name, conn);
    builtFrom.set(entry.name, source);
  }
  const retired = [...state.connections.values()].filter((c) => next.get(c.entry.name) !== c);
  state.connections = next;
  state.builtFrom = builtFrom;
  for (const conn of retired) conn.close();
}

/** SFTP servers services put files on and get files from, with the server key pinned. See README.md. */
export default definePlugin<Record<string, never>, SftpState>({
  name: 'sftp',
  kind: 'outgoing',
  version: '1.0.0',
  sdk: '^1.9.0',
  configSchema: z.object({}).strict().default({}),
  provides: ['connectors.sftp'],
  contributes: {
    sections: { sftp_connection: sftpSectionSchema },
    validateConfig: validateSftp,
  },
  setup(kernel) {
    const state: SftpState = { kernel, connections: new Map(), builtFrom: new Map() };
    for (const call of sftpHostCalls(() => state.connections, kernel)) kernel.addHostCall(call);
    kernel.addConnections(() => [...state.connections.values()].map((c) => c.report()));
    kernel.provide('connectors.sftp', sftpFolders(() => state.connections));
    return state;
  },
  onConfig,
  async stop(state) {
    for (const conn of state.connections.values()) conn.close();
  },
  hooks: {},
});
