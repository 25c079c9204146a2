import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { Logger } from 'pino';
import { definePlugin, SvcError, type ConnectionReport, type KernelApi, type SvcConfig } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import type { FileFolder } from '../../capabilities.ts';
import { BuiltByName } from '../shared/built.ts';
import { FileChannel } from './channel.ts';
import { ClaimTable } from './claims.ts';
import { LocalFolder } from './local-folder.ts';
import { NOT_READ_HEADER, type Identity } from './run.ts';
import { channelFileSectionSchema, validateFilePickup, type ChannelFileEntry } from './schema.ts';

interface PickupState {
  kernel: KernelApi;
  log: Logger;
  claims: ClaimTable;
  /** An unchanged entry (and server timezone) keeps its channel when the config changes elsewhere. */
  channels: BuiltByName<FileChannel>;
  identity: () => Identity;
  listening: boolean;
}

function opener(state: PickupState, entry: ChannelFileEntry): () => Promise<FileFolder> {
  const { local, sftp } = entry.source;
  if (local) {
    const folder = new LocalFolder(resolve(local.path));
    return async () => folder;
  }
  return async () => {
    const folders = state.kernel.lookup('connectors.sftp');
    if (!folders) throw new SvcError('SERVICE_UNAVAILABLE', 'the sftp plugin is off');
    return folders.open(sftp!.connection, sftp!.path);
  };
}

/** Queued files: once their run settled (done, or dead-lettered), the claim says so in the same transaction and the file is moved. */
function listenToQueue(state: PickupState): void {
  const durable = state.kernel.lookup('events.durable');
  if (state.listening || !durable) return;
  state.listening = true;
  durable.refuseReplay?.('file:', (request) => request.headers?.[NOT_READ_HEADER]);
  durable.listen('file:', {
    async settled(tx, s) {
      if (s.next === 'retry') return;
      const claim = await state.claims.ofEvent(tx, s.id, s.cid);
      if (!claim) return;
      await state.claims.setState(claim, s.next === 'done' ? 'done' : 'failed', s.next === 'done' ? null : `${s.outcome.ok ? '' : s.outcome.kind}`, tx);
      return () => state.channels.get(claim.channel)?.kickMoves();
    },
  });
}

async function onConfig(state: PickupState, config: SvcConfig): Promise<void> {
  listenToQueue(state);
  const timing = state.kernel.lookup('scheduler.timing');
  const { built: started, retired } = state.channels.sync(
    config.channel_file,
    (entry) =>
      new FileChannel(entry, {
        kernel: state.kernel,
        log: state.log,
        claims: state.claims,
        identity: state.identity,
        open: opener(state, entry),
        timing: timing ? timing.parse(entry.poll) : { error: 'the scheduler plugin, which times polls, is off' },
      }),
    (entry) => [entry, config.server.timezone],
  );
  // A changed channel's old poll ends before the new one starts on the same folder.
  await Promise.all(retired.map((c) => c.drain()));
  for (const c of started) c.begin();
}

function reports(state: PickupState): ConnectionReport[] {
  return [...state.channels.values()].map((c) => {
    const r: ConnectionReport = { kind: 'file', name: c.entry.name, role: 'channel', state: c.state, readyCheck: c.entry.ready_check, meter: c.meter };
    if (c.state !== 'up' && c.reason !== undefined) r.reason = c.reason;
    return r;
  });
}

/** File pickup: channel_file folders (local or SFTP) polled on a schedule, each file run once and moved away. See README.md. */
export default definePlugin<Record<string, never>, PickupState>({
  name: 'file-pickup',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.9.0',
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { channel_file: channelFileSectionSchema },
    validateConfig: validateFilePickup,
  },
  async setup(kernel) {
    const log = kernel.log.child({ plugin: 'file-pickup' });
    const claims = await ClaimTable.open(kernel.store);
    // Without the cluster plugin, a node is this start: a claim of an earlier start is a dead node's.
    const ownId = `local-${randomUUID()}`;
    const identity = (): Identity => {
      const cluster = kernel.lookup('cluster.node');
      return { node: cluster?.id ?? ownId, liveNodes: cluster && kernel.store.dialect !== 'sqlite' ? () => cluster.liveNodes() : undefined };
    };
    const state: PickupState = { kernel, log, claims, channels: new BuiltByName(), identity, listening: false };
    // Listening before the Use queue runs anything (it starts at its first config) catches settlements of events stored before a restart; when the Use queue is set up after this plugin, the first config does it.
    listenToQueue(state);
    kernel.addConnections(() => reports(state));
    kernel.addControl({
      op: 'file.poll',
      args: z.object({ channel: z.string().min(1) }).strict(),
      handler: async ({ channel }: { channel: string }) => {
        const c = state.channels.get(channel);
        if (!c) throw new SvcError('NOT_FOUND', `no channel_file named '${channel}'`);
        return c.poll();
      },
    });
    kernel.onDrain(async () => {
      await Promise.all([...state.channels.values()].map((c) => c.drain()));
    });
    return state;
  },
  onConfig,
  async stop(state) {
    await Promise.all([...state.channels.values()].map((c) => c.drain()));
  },
  hooks: {},
});
