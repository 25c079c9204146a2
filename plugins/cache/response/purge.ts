import { z } from 'zod';
import { SvcError, type Channel, type CliCommand, type CliEnv, type ControlOp, type KernelApi } from '../../../sdk/plugin/index.ts';
import { scopedRef, tenantOf } from '../../../sdk/plugin/tenants.ts';
import type { CacheBackend } from '../shared/backend.ts';
import { clearRedisOffline } from '../shared/open.ts';
import type { NamedCache } from '../shared/schema.ts';
import { answerPrefix } from './entry.ts';

/**
 * `svc cache purge CHANNEL [--path P]`, the `cache.purge` control op (also in the admin API and the
 * Dashboard): drops a channel's stored answers, or those of one path. Other nodes on the same
 * database drop theirs when the answers live in their memory (a store notification).
 */

export const purgeArgs = z
  .object({
    channel: scopedRef(z.string().min(1)).describe("The channel whose stored answers go (a tenant's administrator writes its own short)."),
    path: z.string().startsWith('/').optional().describe('Only the answers to this path, as the request line spells it (every query string and caller of it).'),
  })
  .strict();
export type PurgeArgs = z.infer<typeof purgeArgs>;

/** Notification of a purge (payload: its arguments as JSON). */
const PURGED = 'response-cache.purge';

/** Where a channel's answers live now. */
export type BackendOf = (channel: Channel) => CacheBackend | undefined;

function cachedChannel(kernel: KernelApi, name: string): Channel {
  const channel = kernel.config().channel_rest.find((c) => c.name === name);
  if (channel === undefined) throw new SvcError('NOT_FOUND', `No channel named '${name}'`);
  if (channel.response_cache === undefined) throw new SvcError('BAD_REQUEST', `Channel '${name}' has no response_cache`);
  return channel;
}

async function purge(kernel: KernelApi, backendOf: BackendOf, args: PurgeArgs): Promise<{ channel: Channel; backend: CacheBackend | undefined; purged: number }> {
  const channel = cachedChannel(kernel, args.channel);
  const backend = backendOf(channel);
  const purged = backend === undefined ? 0 : await backend.clear(answerPrefix(channel.name, args.path));
  return { channel, backend, purged };
}

export function purgeControl(kernel: KernelApi, backendOf: BackendOf): ControlOp<PurgeArgs> {
  return {
    op: 'cache.purge',
    tenantScoped: true,
    args: purgeArgs,
    handler: async (args, caller) => {
      // A tenant's administrators (admin API) purge their tenant's channels only.
      if (caller !== undefined && tenantOf(args.channel) !== caller.tenant) throw new SvcError('NOT_FOUND', `No channel named '${args.channel}'`);
      const { purged } = await purge(kernel, backendOf, args);
      await kernel.store.notify(PURGED, JSON.stringify(args));
      return { channel: args.channel, ...(args.path === undefined ? {} : { path: args.path }), purged };
    },
  };
}

/** Purges here what `svc cache purge` purged on another node, when the answers live in this node's memory. */
export function followPurges(kernel: KernelApi, backendOf: BackendOf): () => void {
  return kernel.store.listen(PURGED, async (payload) => {
    const args = purgeArgs.safeParse(JSON.parse(payload));
    if (!args.success) return;
    const channel = kernel.config().channel_rest.find((c) => c.name === args.data.channel);
    if (channel?.response_cache === undefined || backendOf(channel)?.kind !== 'memory') return;
    const { purged } = await purge(kernel, backendOf, args.data);
    kernel.log.info({ ...args.data, purged }, 'response cache purged on another node: purged here too');
  });
}

const USAGE = 'cache purge CHANNEL [--path P]';

function parse(argv: readonly string[]): PurgeArgs | string {
  let channel: string | undefined;
  let path: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--path' || arg.startsWith('--path=')) {
      if (path !== undefined) return '--path given twice';
      path = arg === '--path' ? argv[++i] : arg.slice('--path='.length);
      if (path === undefined || !path.startsWith('/')) return '--path needs a path starting with /';
    } else if (arg.startsWith('-') || channel !== undefined) return `unexpected argument '${arg}'`;
    else channel = arg;
  }
  return channel === undefined ? "the channel's name" : path === undefined ? { channel } : { channel, path };
}

export const purgeCommand: CliCommand = {
  words: ['cache', 'purge'],
  usage: USAGE,
  describe: "Drops the answers the response cache keeps for channel CHANNEL (or for one path of it) in the running server, on every node.",
  async run(argv, env) {
    const args = parse(argv);
    if (typeof args === 'string') {
      env.err(`${args}\nusage: svc ${USAGE}`);
      return 2;
    }
    const channel = env.config.channel_rest.find((c) => c.name === args.channel);
    if (channel?.response_cache === undefined) {
      env.err(channel === undefined ? `no channel named '${args.channel}' in ${env.configPath}` : `channel '${args.channel}' has no response_cache in ${env.configPath}`);
      return 2;
    }
    const reply = await env.control('cache.purge', args);
    if (reply === undefined) return purgeWithoutServer(channel, args, env);
    if (!reply.ok) {
      env.err(`the running server refused: ${reply.error ?? 'unknown error'}`);
      return 1;
    }
    env.out(`purged ${(reply.value as { purged: number }).purged} stored answer(s) of channel '${args.channel}'${args.path === undefined ? '' : ` for ${args.path}`}`);
    return 0;
  },
};

/** No server: answers in its memory went with it; those in a Redis cache live on and are purged there. */
async function purgeWithoutServer(channel: Channel, args: PurgeArgs, env: CliEnv): Promise<number> {
  const name = channel.response_cache!.cache;
  const entry = name === undefined ? undefined : (env.config as { cache?: NamedCache[] }).cache?.find((c) => c.name === name);
  if (entry?.backend !== 'redis') {
    env.err(`no running server: channel '${channel.name}' keeps its answers in the server's memory, so there is nothing to purge`);
    return 1;
  }
  const purged = await clearRedisOffline(entry, answerPrefix(channel.name, args.path));
  if (purged === undefined) {
    env.err(`no running server, and the Redis of cache '${entry.name}' does not answer: nothing purged`);
    return 1;
  }
  env.out(`no running server: purged ${purged} stored answer(s) of channel '${channel.name}' in the Redis of cache '${entry.name}'`);
  return 0;
}
