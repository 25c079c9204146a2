import { z } from 'zod';
import type { CliCommand, CliEnv, ControlOp, KernelApi } from '../../../sdk/plugin/index.ts';
import { cacheNameSchema } from '../shared/schema.ts';
import { clearRedisOffline } from '../shared/open.ts';
import type { CacheInfo, NamedCaches } from './caches.ts';
import { MEMORY_DEFAULTS, type NamedCache } from '../shared/schema.ts';
import { cachesOf } from './schema.ts';

/**
 * `svc cache list` and `svc cache clear NAME`: clients of the running server's control ops
 * `cache.list` and `cache.clear`. A clear reaches the other nodes on the same database through a
 * store notification (their memory caches; a Redis cache is one for all and cleared once).
 */

export const clearArgs = z.object({ name: cacheNameSchema.describe('The cache to empty.') }).strict();

/** Notification of a clear (payload: the cache's name): every node empties its own memory copy. */
const CLEARED = 'cache.clear';

export function cacheControls(kernel: KernelApi, caches: NamedCaches): ControlOp[] {
  const list: ControlOp<Record<string, never>> = { op: 'cache.list', readOnly: true, args: z.object({}).strict(), handler: async () => caches.list() };
  const clear: ControlOp<z.infer<typeof clearArgs>> = {
    op: 'cache.clear',
    args: clearArgs,
    handler: async ({ name }) => {
      const cleared = await caches.clear(name);
      await kernel.store.notify(CLEARED, name);
      return { cache: name, cleared };
    },
  };
  return [list, clear];
}

/** Empties here a memory cache that `svc cache clear` emptied on another node. */
export function followClears(kernel: KernelApi, caches: NamedCaches): () => void {
  return kernel.store.listen(CLEARED, async (name) => {
    if (caches.backend(name)?.kind !== 'memory') return;
    const cleared = await caches.clear(name);
    kernel.log.info({ cache: name, cleared }, 'cache cleared on another node: cleared here too');
  });
}

const entries = (n: number) => (n === 1 ? '1 entry' : `${n} entries`);

function sizeOf(info: CacheInfo): string {
  if (info.backend === 'redis') return `redis ${info.redis}${info.connected ? '' : ' (not connected)'}`;
  return `memory, ${info.entries}/${info.max_entries} entries, ${info.bytes}/${info.max_bytes} bytes`;
}

/** What the config alone says, with no server to ask. */
function configured(entry: NamedCache): CacheInfo {
  return { name: entry.name, backend: entry.backend, ttl_ms: entry.ttl, max_value_bytes: entry.max_value_bytes, services: entry.services, hits: 0, misses: 0 };
}

const LIST_USAGE = 'cache list [--json]';
export const listCommand: CliCommand = {
  words: ['cache', 'list'],
  usage: LIST_USAGE,
  describe: 'Lists the named caches: backend, time to live, services, and from the running server what each holds and its hits and misses.',
  async run(args, env) {
    const json = args.includes('--json');
    if (args.some((a) => a !== '--json')) {
      env.err(`unexpected arguments\nusage: svc ${LIST_USAGE}`);
      return 2;
    }
    const reply = await env.control('cache.list', {});
    if (reply !== undefined && !reply.ok) {
      env.err(`the running server refused: ${reply.error ?? 'unknown error'}`);
      return 1;
    }
    const running = reply !== undefined;
    const caches = running ? (reply.value as CacheInfo[]) : cachesOf(env.config).map(configured);
    if (json) env.out(JSON.stringify(caches, null, 2));
    else if (caches.length === 0) env.out(`no caches in ${env.configPath}`);
    else {
      if (!running) env.out('no running server: the config only');
      const width = Math.max(...caches.map((c) => c.name.length));
      for (const c of caches) {
        const figures = running ? `${sizeOf(c)}; hits ${c.hits}, misses ${c.misses}` : c.backend;
        env.out(`${c.name.padEnd(width)}  ${figures}; ttl ${c.ttl_ms} ms; services: ${c.services.length ? c.services.join(', ') : 'none'}`);
      }
    }
    return 0;
  },
};

const CLEAR_USAGE = 'cache clear NAME';
export const clearCommand: CliCommand = {
  words: ['cache', 'clear'],
  usage: CLEAR_USAGE,
  describe: "Empties named cache NAME in the running server (every node's copy of a memory cache; a Redis cache once for all).",
  async run(args, env) {
    const name = args[0];
    if (args.length !== 1 || name === undefined || name.startsWith('-')) {
      env.err(`the cache's name, and nothing else\nusage: svc ${CLEAR_USAGE}`);
      return 2;
    }
    const entry = cachesOf(env.config).find((c) => c.name === name);
    if (entry === undefined) {
      env.err(`no cache named '${name}' in ${env.configPath}`);
      return 2;
    }
    const reply = await env.control('cache.clear', { name });
    if (reply === undefined) return clearWithoutServer(entry, env);
    if (!reply.ok) {
      env.err(`the running server refused: ${reply.error ?? 'unknown error'}`);
      return 1;
    }
    env.out(`cleared ${entries((reply.value as { cleared: number }).cleared)} of cache '${name}'`);
    return 0;
  },
};

/** No server: a memory cache went with it; a Redis cache lives on (other nodes may use it) and is cleared there. */
async function clearWithoutServer(entry: NamedCache, env: CliEnv): Promise<number> {
  if (entry.backend === 'memory') {
    env.err(`no running server: cache '${entry.name}' lives in its memory only (at most ${entry.max_entries ?? MEMORY_DEFAULTS.max_entries} entries), so there is nothing to clear`);
    return 1;
  }
  const cleared = await clearRedisOffline(entry, '');
  if (cleared === undefined) {
    env.err(`no running server, and the Redis of cache '${entry.name}' does not answer: nothing cleared`);
    return 1;
  }
  env.out(`no running server: cleared ${entries(cleared)} of cache '${entry.name}' in its Redis`);
  return 0;
}
