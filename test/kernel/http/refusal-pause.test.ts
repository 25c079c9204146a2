import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * server.refusal_pause_ms (kernel/platform/refusal-pause.ts): after a 429 on a keep-alive
 * connection, that connection's next request is read only after the pause (3/4 of it to all of
 * it: test/kernel/sandbox/supervision.test.ts has a quarantined service's 503); other connections,
 * and connections of a trusted proxy, go on at once. Over real sockets.
 */
const ECHO = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`;
const channels = (pause: number, proxies = '') => `
server: { refusal_pause_ms: ${pause}${proxies} }
channel_rest:
  - name: capped
    url_path: /capped
    service: echo
    security: none
    rate_limiting: [{ cidr_list: [], time_range: [{ is_all_day: true, limit: 1, limit_unit: hour }] }]
  - { name: open, url_path: /open, service: echo, security: none }
`;

/** Status and milliseconds of each request, made one after another on one connection; POSTs carry a body the refusal leaves unread. */
async function sequence(url: string, paths: string[], method: 'GET' | 'POST' = 'GET'): Promise<Array<[number, number]>> {
  const client = new Client(url, { pipelining: 1 });
  try {
    const out: Array<[number, number]> = [];
    for (const path of paths) {
      const t0 = performance.now();
      const res = await client.request(method === 'GET' ? { method, path } : { method, path, body: JSON.stringify({ pad: 'x'.repeat(20_000) }), headers: { 'content-type': 'application/json' } });
      await res.body.dump();
      out.push([res.statusCode, performance.now() - t0]);
    }
    return out;
  } finally {
    await client.close();
  }
}

describe('the pause after a refusal', () => {
  let k: TestKernel;
  beforeAll(async () => {
    k = await startKernel({ config: channels(400), services: { 'echo.ts': ECHO }, listen: true });
  });
  afterAll(() => k?.close());

  it("holds the refused connection's next request for the pause, not another connection's", async () => {
    const [first, refused, next] = await sequence(k.url!, ['/capped', '/capped', '/open']);
    expect(first![0]).toBe(200);
    expect(refused![0]).toBe(429);
    expect(next![0]).toBe(200);
    expect(next![1]).toBeGreaterThanOrEqual(290); // 400 ms less up to a quarter at random
    // A new connection is not held, and a connection without a refusal is not either.
    const [fresh, again] = await sequence(k.url!, ['/open', '/open']);
    expect(fresh![0]).toBe(200);
    expect(fresh![1]).toBeLessThan(300);
    expect(again![1]).toBeLessThan(300);
  });

  it('holds it too when the refusal left a request body unread', async () => {
    const [refused, next] = await sequence(k.url!, ['/capped', '/open'], 'POST');
    expect(refused![0]).toBe(429);
    expect(next![0]).toBe(200);
    expect(next![1]).toBeGreaterThanOrEqual(290); // 400 ms less up to a quarter at random
  });
});

describe('without the pause, and for a trusted proxy', () => {
  for (const [what, config] of [
    ['refusal_pause_ms: 0', channels(0)],
    ['a trusted proxy', channels(400, ', trusted_proxies: [127.0.0.1, "::1", "::ffff:127.0.0.1"]')],
  ] as const) {
    it(`reads the next request at once with ${what}`, async () => {
      const k = await startKernel({ config, services: { 'echo.ts': ECHO }, listen: true });
      try {
        const [, refused, next] = await sequence(k.url!, ['/capped', '/capped', '/open']);
        expect(refused![0]).toBe(429);
        expect(next![1]).toBeLessThan(300);
      } finally {
        await k.close();
      }
    });
  }
});
