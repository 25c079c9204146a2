import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

/**
 * Channels' answers kept and served again, through fastify inject: real isolates, the real chain
 * (authentication and rate limits before the cache), time on an injected clock.
 */

const PAGE = `import { service } from 'svc/sdk';
export default service({
  handle(ctx) {
    const q = ctx.query;
    if (q.cc) ctx.response.headers['Cache-Control'] = q.cc;
    if (q.cookie) ctx.response.headers['Set-Cookie'] = 'session=1';
    if (q.vary) ctx.response.headers['Vary'] = q.vary;
    if (q.status) ctx.response.status = Number(q.status);
    ctx.response.headers['X-Made-For'] = ctx.user ? ctx.user.username : 'anyone';
    if (q.bytes) {
      ctx.response.contentType = 'application/octet-stream';
      return new Uint8Array([0, 255, 10, 13, 128]);
    }
    return { cid: ctx.cid, user: ctx.user ? ctx.user.username : null, lang: ctx.headers['accept-language'] ?? null };
  },
});
`;

const CONFIG = `
security:
  - { name: alice, type: basic_auth, username: alice, password: alice-password-1 }
  - { name: bob, type: basic_auth, username: bob, password: bob-password-12 }
groups:
  - { name: people, members: [alice, bob] }
channel_rest:
  - { name: open, url_path: '/open/{id}', service: page, security: none, response_cache: { ttl: 10s } }
  - { name: vary, url_path: /vary, service: page, security: none, response_cache: { vary_query: [page], vary_headers: [Accept-Language] } }
  - { name: secured, url_path: /secured, service: page, security: people, response_cache: {} }
  - { name: together, url_path: /together, service: page, security: people, response_cache: { vary_user: false } }
  - name: limited
    url_path: /limited
    service: page
    security: none
    response_cache: {}
    rate_limiting: [{ time_range: [{ is_all_day: true, limit: 3, limit_unit: day }] }]
  - { name: plain, url_path: /plain, service: page, security: none }
`;

const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
const ALICE = basic('alice', 'alice-password-1');
const BOB = basic('bob', 'bob-password-12');

const clock = new ManualClock();
let k: TestKernel;

beforeAll(async () => {
  k = await startKernel({ config: CONFIG, clock, services: { 'page.ts': PAGE } });
});
afterAll(() => k?.close());

interface Answer {
  status: number;
  cache: string | undefined;
  cid: string | undefined;
  body: string;
  headers: Record<string, unknown>;
}

async function get(url: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET'): Promise<Answer> {
  const res = await k.app.inject({ method, url, headers });
  const cid = method === 'GET' && res.statusCode === 200 && res.body.startsWith('{') ? (res.json() as { cid?: string }).cid : undefined;
  return { status: res.statusCode, cache: res.headers['x-svc-cache'] as string | undefined, cid, body: res.body, headers: res.headers };
}

/** Each request of the list, in order: what X-Svc-Cache said. */
async function results(...urls: Array<string | [string, Record<string, string>]>): Promise<Array<string | undefined>> {
  const out: Array<string | undefined> = [];
  for (const u of urls) out.push((await (typeof u === 'string' ? get(u) : get(u[0], u[1]))).cache);
  return out;
}

describe('hits and misses', () => {
  it('answers a repeated GET from the cache: the same body, its headers, an Age, without the service', async () => {
    const first = await get('/open/1');
    expect(first).toMatchObject({ status: 200, cache: 'MISS' });
    expect(first.headers['x-made-for']).toBe('anyone');
    clock.advance(4_000);
    const second = await get('/open/1');
    expect(second).toMatchObject({ status: 200, cache: 'HIT', body: first.body });
    expect(second.headers).toMatchObject({ 'x-made-for': 'anyone', age: '4', 'content-type': first.headers['content-type'] });
    // The request's own CID, not the stored answer's.
    expect(second.headers['x-svc-cid']).not.toBe(first.headers['x-svc-cid']);
  });

  it('forgets an answer after the channel ttl, on the injected clock', async () => {
    await get('/open/ttl');
    clock.advance(9_999);
    expect((await get('/open/ttl')).cache).toBe('HIT');
    clock.advance(1);
    expect(await results('/open/ttl', '/open/ttl')).toEqual(['MISS', 'HIT']);
  });

  it('keys by path and every query parameter (in any order) unless vary_query says which', async () => {
    expect(await results('/open/2?a=1&b=2', '/open/2?b=2&a=1', '/open/2?a=1', '/open/3?a=1&b=2')).toEqual(['MISS', 'HIT', 'MISS', 'MISS']);
    expect(await results('/vary?page=1&x=1', '/vary?page=1&x=2', '/vary?x=3&page=1', '/vary?page=2', '/vary')).toEqual(['MISS', 'HIT', 'HIT', 'MISS', 'MISS']);
  });

  it('keys by the headers vary_headers names', async () => {
    const de = await get('/vary?page=9', { 'accept-language': 'de' });
    const fr = await get('/vary?page=9', { 'accept-language': 'fr' });
    expect([de.cache, fr.cache]).toEqual(['MISS', 'MISS']);
    const again = await get('/vary?page=9', { 'accept-language': 'de' });
    expect(again).toMatchObject({ cache: 'HIT', cid: de.cid });
    expect(JSON.parse(again.body).lang).toBe('de');
  });

  it('keeps bytes as bytes, with their content type', async () => {
    const miss = await k.app.inject({ method: 'GET', url: '/open/bin?bytes=1' });
    const hit = await k.app.inject({ method: 'GET', url: '/open/bin?bytes=1' });
    expect(hit.headers['x-svc-cache']).toBe('HIT');
    expect(hit.rawPayload).toEqual(Buffer.from([0, 255, 10, 13, 128]));
    expect(hit.headers['content-type']).toBe(miss.headers['content-type']);
  });

  it('answers HEAD from the GET entry; a HEAD that misses stores nothing', async () => {
    const got = await get('/open/head');
    const head = await get('/open/head', {}, 'HEAD');
    expect(head).toMatchObject({ status: 200, cache: 'HIT', body: '' });
    expect(head.headers['x-made-for']).toBe('anyone');
    expect(got.cache).toBe('MISS');
    expect((await get('/open/head2', {}, 'HEAD')).cache).toBe('MISS');
    expect((await get('/open/head2')).cache).toBe('MISS');
  });

  it('stores only 200 answers, without Set-Cookie or Vary: *', async () => {
    expect(await results('/open/s?status=201', '/open/s?status=201', '/open/s?status=404', '/open/s?status=404')).toEqual(['MISS', 'MISS', 'MISS', 'MISS']);
    expect(await results('/open/c?cookie=1', '/open/c?cookie=1', '/open/v?vary=*', '/open/v?vary=*')).toEqual(['MISS', 'MISS', 'MISS', 'MISS']);
    expect(await results('/open/v?vary=accept', '/open/v?vary=accept')).toEqual(['MISS', 'HIT']);
  });

  it('leaves channels without response_cache alone', async () => {
    expect(await results('/plain', '/plain')).toEqual([undefined, undefined]);
  });
});

describe('Cache-Control, both ways', () => {
  it('request no-store: BYPASS, neither looked up nor stored', async () => {
    await get('/open/ns');
    expect(await results(['/open/ns', { 'cache-control': 'no-store' }], '/open/ns')).toEqual(['BYPASS', 'HIT']);
    expect(await results(['/open/ns2', { 'cache-control': 'no-store' }], '/open/ns2')).toEqual(['BYPASS', 'MISS']);
  });

  it('request no-cache (or max-age=0): BYPASS the lookup, the fresh answer replaces the stored one', async () => {
    const first = await get('/open/nc');
    const fresh = await get('/open/nc', { 'cache-control': 'no-cache' });
    expect(fresh.cache).toBe('BYPASS');
    expect(fresh.cid).not.toBe(first.cid);
    expect(await get('/open/nc')).toMatchObject({ cache: 'HIT', cid: fresh.cid });
    const zero = await get('/open/nc', { 'cache-control': 'max-age=0' });
    expect(zero.cache).toBe('BYPASS');
    expect(await get('/open/nc')).toMatchObject({ cache: 'HIT', cid: zero.cid });
  });

  it('request max-age: an older answer is a miss, refreshed', async () => {
    await get('/open/ma');
    clock.advance(6_000);
    expect(await results(['/open/ma', { 'cache-control': 'max-age=7' }], ['/open/ma', { 'cache-control': 'max-age=5' }], ['/open/ma', { 'cache-control': 'max-age=5' }])).toEqual(['HIT', 'MISS', 'HIT']);
  });

  it('response no-store, no-cache or private: not stored', async () => {
    for (const cc of ['no-store', 'no-cache', 'private', 'Private, max-age=60']) {
      const url = `/open/rc?cc=${encodeURIComponent(cc)}`;
      expect(await results(url, url), cc).toEqual(['MISS', 'MISS']);
    }
  });

  it('response max-age and s-maxage lower the ttl (s-maxage first), never raise it', async () => {
    const maxAge = '/open/age?cc=max-age%3D2';
    await get(maxAge);
    clock.advance(1_999);
    expect(await results(maxAge)).toEqual(['HIT']);
    clock.advance(1);
    expect(await results(maxAge)).toEqual(['MISS']);
    const shared = '/open/age?cc=max-age%3D1%2C%20s-maxage%3D3';
    await get(shared);
    clock.advance(2_999);
    expect(await results(shared)).toEqual(['HIT']);
    clock.advance(1);
    expect(await results(shared)).toEqual(['MISS']);
    const long = '/open/age?cc=max-age%3D3600';
    await get(long);
    clock.advance(10_000);
    expect(await results(long)).toEqual(['MISS']);
  });
});

describe('after security and rate limits', () => {
  it('still authenticates a request the cache could answer; each caller gets its own answers', async () => {
    const alice = await get('/secured', ALICE);
    expect(alice).toMatchObject({ status: 200, cache: 'MISS' });
    expect(JSON.parse(alice.body).user).toBe('alice');
    for (const headers of [{}, basic('alice', 'wrong-password'), basic('mallory', 'alice-password-1')]) {
      const refused = await get('/secured', headers);
      expect(refused.status).toBe(401);
      expect(refused.cache).toBeUndefined();
      expect(refused.body).not.toContain(alice.cid!);
    }
    const bob = await get('/secured', BOB);
    expect(bob).toMatchObject({ status: 200, cache: 'MISS' });
    expect(JSON.parse(bob.body).user).toBe('bob');
    expect(await get('/secured', ALICE)).toMatchObject({ cache: 'HIT', cid: alice.cid });
    expect(await get('/secured', BOB)).toMatchObject({ cache: 'HIT', cid: bob.cid });
  });

  it('shares answers among the callers a channel admits with vary_user: false', async () => {
    const alice = await get('/together', ALICE);
    expect(await get('/together', BOB)).toMatchObject({ cache: 'HIT', cid: alice.cid });
    expect((await get('/together')).status).toBe(401);
  });

  it('counts a hit against the rate limit like any request, with this request’s figures', async () => {
    const first = await get('/limited');
    const second = await get('/limited');
    expect([first.cache, second.cache]).toEqual(['MISS', 'HIT']);
    expect([first.headers['x-ratelimit-remaining'], second.headers['x-ratelimit-remaining']]).toEqual(['2', '1']);
    await get('/limited');
    expect((await get('/limited')).status).toBe(429);
  });

  it('passes through a request carrying credentials on a channel without security: BYPASS, nothing stored', async () => {
    await get('/open/cred');
    for (const headers of [ALICE, { cookie: 'session=1' }]) {
      const bypassed = await get('/open/cred', headers);
      expect(bypassed.cache).toBe('BYPASS');
    }
    expect(await results(['/open/cred2', ALICE], '/open/cred2')).toEqual(['BYPASS', 'MISS']);
  });
});

describe('purge', () => {
  it('drops a channel’s answers, or one path’s, on request (cache.purge)', async () => {
    await get('/open/p1');
    await get('/open/p1?x=1');
    await get('/open/p2');
    expect(await k.kernel.runControl('cache.purge', { channel: 'open', path: '/open/p1' })).toEqual({ channel: 'open', path: '/open/p1', purged: 2 });
    expect(await results('/open/p1', '/open/p1?x=1', '/open/p2')).toEqual(['MISS', 'MISS', 'HIT']);
    const { purged } = (await k.kernel.runControl('cache.purge', { channel: 'open' })) as { purged: number };
    expect(purged).toBeGreaterThanOrEqual(3);
    expect(await results('/open/p2')).toEqual(['MISS']);
    // Another channel's answers stay.
    expect((await get('/vary?page=1&x=1')).cache).toBe('HIT');
  });

  it('refuses a channel that does not exist or caches nothing', async () => {
    await expect(k.kernel.runControl('cache.purge', { channel: 'nope' })).rejects.toThrow("No channel named 'nope'");
    await expect(k.kernel.runControl('cache.purge', { channel: 'plain' })).rejects.toThrow("Channel 'plain' has no response_cache");
  });
});
