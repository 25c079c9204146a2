import { connect } from 'node:net';
import { startSvcCli, type Running } from '../lib.ts';
import { compareChannels } from '../peers/channel.ts';

/**
 * Caches (issue 40). Named caches: a service that gets or sets one small value per request, in a
 * memory cache and in a Redis one, against the same service doing nothing, beside another host
 * call (an HMAC with a named secret) for what the crossing to the kernel costs by itself. Response caching: a
 * channel answering a 1 KB document from its cache (HIT) and from the service with the answer
 * stored (a miss, forced with `Cache-Control: no-cache`), against the same channel without
 * response_cache. Every case on a server of its own, interleaved rounds, medians.
 * The Redis is SVC_BENCH_REDIS, else 127.0.0.1:6379; without one its rows are left out.
 */
const REDIS = process.env.SVC_BENCH_REDIS ?? 'redis://127.0.0.1:6379';
const VALUE = JSON.stringify({ id: 42, name: 'a cached lookup', tags: ['a', 'b', 'c'] });

const service = (body: string) => `import { cache, secret, service } from 'svc/sdk';\nlet n = 0;\nexport default service({ async handle(ctx) { ${body} } });\n`;
const SERVICES = {
  'noop.ts': service(`return ${VALUE};`),
  'get.ts': service(`const c = cache(String(ctx.query.c)); return (await c.get('k')) ?? (await c.set('k', ${VALUE}), ${VALUE});`),
  'sign.ts': service(`return { sig: await secret('bench').hmacSha256Hex('a') };`),
  'set.ts': service(`await cache(String(ctx.query.c)).set('k' + (n++ % 1000), ${VALUE}); return ${VALUE};`),
  'doc.ts': `import { service } from 'svc/sdk';\nconst doc = { items: Array.from({ length: 12 }, (_, i) => ({ id: i, name: 'item ' + i, price: i * 1.5, tags: ['x', 'y'] })) };\nexport default service({ handle: () => doc });\n`,
};

function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port || 6379) });
    socket.setTimeout(1000, () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(false));
    socket.once('connect', () => (socket.destroy(), resolve(true)));
  });
}

export async function run(): Promise<void> {
  const redis = await reachable(REDIS);
  const channel = (name: string, extra: Record<string, unknown> = {}) => ({ name, url_path: `/${name}`, service: name === 'cached' || name === 'uncached' ? 'doc' : name, security: 'none', ...extra });
  const config = {
    server: { sandbox: { workers: 1 } },
    cache: [
      { name: 'mem', services: ['get', 'set'] },
      ...(redis ? [{ name: 'shared', backend: 'redis', redis_url: REDIS, key_prefix: `svc:bench:${process.pid}:`, services: ['get', 'set'] }] : []),
    ],
    secrets: [{ name: 'bench', value: 'a-bench-secret-of-no-value', services: ['sign'] }],
    channel_rest: [channel('noop'), channel('sign'), channel('get'), channel('set'), channel('uncached'), channel('cached', { response_cache: { ttl: '1h' } })],
  };
  const svc = (probe: string) => (): Promise<Running> => startSvcCli(config, SERVICES, probe);

  await compareChannels(
    'Named caches: one get or set of a 60-byte value per request, through a service, 1 sandbox process',
    [
      { name: 'service doing nothing (baseline)', note: 'the same answer, no cache call', path: '/noop', start: svc('/noop') },
      { name: 'named-secret HMAC (another host call, for reference)', note: 'what any call from the sandbox to the kernel costs', path: '/sign', start: svc('/sign') },
      { name: 'cache get, memory', note: 'a hit each request', path: '/get?c=mem', start: svc('/get?c=mem') },
      { name: 'cache set, memory', note: '1000 keys in turn', path: '/set?c=mem', start: svc('/set?c=mem') },
      ...(redis
        ? [
            { name: 'cache get, redis', note: 'a hit each request; Redis on this machine', path: '/get?c=shared', start: svc('/get?c=shared') },
            { name: 'cache set, redis', note: 'SET PX, 1000 keys in turn', path: '/set?c=shared', start: svc('/set?c=shared') },
          ]
        : []),
    ],
    'baseline',
  );

  await compareChannels(
    'Response caching: a 1 KB JSON answer, 1 sandbox process',
    [
      { name: 'channel without response_cache (baseline)', note: 'the service answers each request', path: '/uncached', start: svc('/uncached') },
      { name: 'response_cache, miss', note: 'Cache-Control: no-cache: the service answers, the answer is stored (memory)', path: '/cached', headers: { 'cache-control': 'no-cache' }, start: svc('/cached') },
      { name: 'response_cache, hit', note: 'answered from this node’s memory, the service not called', path: '/cached', start: svc('/cached') },
    ],
    'baseline',
  );
}
