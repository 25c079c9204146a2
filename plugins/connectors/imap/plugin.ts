import { z } from 'zod';
import type { Logger } from 'pino';
import { definePlugin, type ConnectionReport, type KernelApi, type SvcConfig } from '../../../sdk/plugin/index.ts';
import { BuiltByName } from '../shared/built.ts';
import { ImapChannel } from './channel.ts';
import { ChannelLease, leaseIdentity, type LeaseIdentity } from './lease.ts';
import { channelImapSectionSchema, validateImap } from './schema.ts';
import { ImapTables } from './store.ts';

interface ImapState {
  kernel: KernelApi;
  log: Logger;
  tables: ImapTables;
  /** An unchanged entry keeps its connection when the config changes elsewhere. */
  channels: BuiltByName<ImapChannel>;
  draining: boolean;
  /** Read at the first config: the nodes plugin has provided 'cluster.node' by then. */
  identity: LeaseIdentity | undefined;
}

/** Starts new and changed channels, stops changed and removed ones; a changed one stops before its successor starts on the same mailbox. */
async function onConfig(state: ImapState, config: SvcConfig): Promise<void> {
  if (state.draining) return;
  const { built, kept, retired } = state.channels.sync(config.channel_imap, (entry) => {
    state.identity ??= leaseIdentity(state.kernel);
    const lease = new ChannelLease(entry.name, state.tables, state.kernel.clock, state.identity, entry.lease_ms);
    return new ImapChannel(entry, state.kernel, state.tables, state.log, lease);
  });
  for (const c of kept) c.pipeline.declare();
  await Promise.all(retired.map((c) => c.drain()));
  for (const c of built) c.start();
}

function reports(state: ImapState): ConnectionReport[] {
  return [...state.channels.values()].map((c) => {
    // A standby channel is not failing: another node works it (docs/decisions/imap.md).
    const r: ConnectionReport = { kind: 'imap', name: c.entry.name, role: 'channel', state: c.state, readyCheck: c.entry.ready_check && !c.standby, meter: c.meter };
    if (c.state !== 'up' && c.reason !== undefined) r.reason = c.reason;
    return r;
  });
}

async function drainAll(state: ImapState): Promise<void> {
  state.draining = true;
  await Promise.all([...state.channels.values()].map((c) => c.drain()));
}

/** IMAP: channel_imap entries watch a mailbox folder and run a service for each new mail. See README.md. */
export default definePlugin<Record<string, never>, ImapState>({
  name: 'imap',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.9.0',
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { channel_imap: channelImapSectionSchema },
    validateConfig: validateImap,
  },
  async setup(kernel) {
    const log = kernel.log.child({ plugin: 'imap' });
    const tables = await ImapTables.open(kernel.store);
    const state: ImapState = { kernel, log, tables, channels: new BuiltByName(), draining: false, identity: undefined };
    kernel.addConnections(() => reports(state));
    kernel.onDrain(() => drainAll(state));
    return state;
  },
  onConfig,
  async stop(state) {
    await drainAll(state);
  },
  hooks: {},
});
