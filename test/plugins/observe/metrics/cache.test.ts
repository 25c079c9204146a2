import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseExposition, startObserved, sampleValue, type ObservedKernel, type Sample } from '../support.ts';

/** The cache series at /metrics move by exactly what services and channels did. */

const SERVICES = {
  'user.ts': `import { cache, service } from 'svc/sdk';\nexport default service({ async handle(ctx) { const c = cache('lookups'); if (ctx.query.set) await c.set(ctx.query.set, 'value'); return { found: (await c.get(String(ctx.query.get))) !== undefined }; } });\n`,
  'page.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ cid: ctx.cid }) });\n`,
};

let k: ObservedKernel;
beforeAll(async () => {
  k = await startObserved({
    config: `
cache:
  - { name: lookups, services: [user] }
channel_rest:
  - { name: user, url_path: /user, service: user, security: none }
  - { name: page, url_path: /page, service: page, security: none, response_cache: {} }
`,
    services: SERVICES,
  });
}, 60_000);
afterAll(() => k?.close());

async function samples(): Promise<Sample[]> {
  return parseExposition(await (await fetch(`${k.admin}/metrics`)).text());
}

describe('cache series', () => {
  it("count services' hits and misses, what a memory cache holds, and the response cache's results", async () => {
    for (const path of ['/user?get=a', '/user?set=a&get=a', '/user?get=a', '/user?get=b', '/page', '/page', '/page']) expect((await fetch(k.url + path)).status).toBe(200);
    await fetch(k.url + '/page', { headers: { 'cache-control': 'no-store' } });
    const s = await samples();
    expect(sampleValue(s, 'svc_cache_hits_total', { cache: 'lookups' })).toBe(2);
    expect(sampleValue(s, 'svc_cache_misses_total', { cache: 'lookups' })).toBe(2);
    expect(sampleValue(s, 'svc_cache_entries', { cache: 'lookups' })).toBe(1);
    expect(sampleValue(s, 'svc_cache_bytes', { cache: 'lookups' })).toBe('k:a'.length + '"value"'.length);
    expect(['HIT', 'MISS', 'BYPASS'].map((result) => sampleValue(s, 'svc_response_cache_requests_total', { channel: 'page', result }))).toEqual([2, 1, 1]);
  });
});
