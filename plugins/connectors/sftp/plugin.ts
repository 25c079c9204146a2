import { z } from 'zod';
import { definePlugin, type KernelApi, type SvcConfig } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { BuiltByName } from '../shared/built.ts';
import { SftpConnection } from './connection.ts';
import { sftpFolders } from './folders.ts';
import { sftpHostCalls } from './host-calls.ts';
import { sftpSectionSchema, validateSftp } from './schema.ts';

interface SftpState {
  kernel: KernelApi;
  /** An unchanged entry keeps its sessions when the config changes elsewhere. */
  connections: BuiltByName<SftpConnection>;
}

/** Rebuilds only the connections whose entry changed; a replaced one closes its sessions as calls give them back. */
function onConfig(state: SftpState, config: SvcConfig): void {
  const { built, retired } = state.connections.sync(config.sftp_connection, (entry) => new SftpConnection(entry, state.kernel));
  for (const conn of built) if (conn.entry.ready_check) void conn.probe();
  for (const conn of retired) conn.close();
}

/** SFTP servers services put files on and get files from, with the server key pinned. See README.md. */
export default definePlugin<Record<string, never>, SftpState>({
  name: 'sftp',
  kind: 'outgoing',
  version: '1.0.0',
  sdk: '^1.17.0',
  configSchema: z.object({}).strict().default({}),
  provides: ['connectors.sftp'],
  contributes: {
    sections: { sftp_connection: sftpSectionSchema },
    validateConfig: validateSftp,
  },
  setup(kernel) {
    const state: SftpState = { kernel, connections: new BuiltByName() };
    for (const call of sftpHostCalls((name) => state.connections.get(name), kernel)) kernel.addHostCall(call);
    kernel.addConnections(() => [...state.connections.values()].map((c) => c.report()));
    kernel.provide('connectors.sftp', sftpFolders((name) => state.connections.get(name)));
    return state;
  },
  onConfig,
  async stop(state) {
    for (const conn of state.connections.values()) conn.close();
  },
  hooks: {},
});
