import { z } from 'zod';
import { SvcError, type HostCall, type HostCallContext, scopedFor } from '../../../sdk/plugin/index.ts';
import { cacheNameSchema, MAX_TTL_MS } from '../shared/schema.ts';
import { SERVICE_KEYS, type NamedCaches } from './caches.ts';

/** Longest key a service may use, in characters. */
export const MAX_KEY_LENGTH = 1024;

const keySchema = z.string().min(1).max(MAX_KEY_LENGTH);
const ttlArg = z.number().int().min(1).max(MAX_TTL_MS).optional();

export const getArgs = z.object({ name: cacheNameSchema, key: keySchema }).strict();
export const setArgs = getArgs
  .extend({
    // The SDK sends the value as JSON; parsed here, it is JSON, and its text is what is stored and measured.
    value: z.unknown().refine((v) => v !== undefined, 'a value is required (undefined is not JSON)'),
    ttlMs: ttlArg,
  })
  .strict();
export const incrArgs = getArgs.extend({ by: z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER), ttlMs: ttlArg }).strict();

type GetArgs = z.infer<typeof getArgs>;

/**
 * `cache.get`, `cache.set`, `cache.delete`, `cache.incr`: services' named caches, answered in the
 * kernel process (a Redis is reached from here, never from a sandbox). A cache the config does not
 * name is NotFound, one not granted to the calling service Forbidden (logged, as for named
 * secrets); a value over the cache's max_value_bytes is BadRequest naming the limit.
 */
export function cacheHostCalls(caches: NamedCaches): HostCall[] {
  const open = (args: GetArgs, ctx: HostCallContext) => {
    try {
      return caches.use(scopedFor(ctx.service, args.name), ctx.service);
    } catch (err) {
      if (err instanceof SvcError) ctx.log.warn({ cache: args.name, refused: err.code }, `named cache refused: ${err.details}`);
      throw err;
    }
  };
  const get: HostCall<GetArgs> = {
    op: 'cache.get',
    args: getArgs,
    handler: async (args, ctx) => {
      const { backend, counts } = open(args, ctx);
      const text = await backend.get(SERVICE_KEYS + args.key);
      if (text === undefined) counts.misses++;
      else counts.hits++;
      // null is a miss; a stored JSON null comes back as the text 'null'.
      return text ?? null;
    },
  };
  const set: HostCall<z.infer<typeof setArgs>> = {
    op: 'cache.set',
    args: setArgs,
    handler: async (args, ctx) => {
      const { backend, entry } = open(args, ctx);
      const text = JSON.stringify(args.value);
      const bytes = Buffer.byteLength(text);
      if (bytes > entry.max_value_bytes) throw new SvcError('BAD_REQUEST', `Value of ${bytes} bytes is larger than cache '${entry.name}' takes (max_value_bytes ${entry.max_value_bytes})`);
      await backend.set(SERVICE_KEYS + args.key, text, args.ttlMs ?? entry.ttl);
      return null;
    },
  };
  const remove: HostCall<GetArgs> = {
    op: 'cache.delete',
    args: getArgs,
    handler: async (args, ctx) => open(args, ctx).backend.delete(SERVICE_KEYS + args.key),
  };
  const incr: HostCall<z.infer<typeof incrArgs>> = {
    op: 'cache.incr',
    args: incrArgs,
    handler: async (args, ctx) => {
      const { backend, entry } = open(args, ctx);
      return backend.incr(SERVICE_KEYS + args.key, args.by, args.ttlMs ?? entry.ttl);
    },
  };
  return [get, set, remove, incr];
}
