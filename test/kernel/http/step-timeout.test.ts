import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePlugin, type Exchange } from '../../../sdk/plugin/index.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { rawHttp } from '../../helpers/raw-http.ts';

/**
 * server.step_timeout_ms: a chain step that never finishes (a plugin's hook, a plugin route's
 * handler) no longer holds its request for good: past the limit the request is answered 503
 * STEP_TIMEOUT with its CID. The service call keeps its own, longer limit, and a body still
 * arriving is left to request_timeout_ms.
 */
const LIMIT_MS = 600;

const hanging = definePlugin({
  name: 'hanging-steps',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.0.0',
  configSchema: z.object({}),
  setup(kernel) {
    kernel.addRoute({ name: 'hang-route', method: 'GET', url: '/_hang/route', handler: () => new Promise<void>(() => undefined) });
    return undefined;
  },
  hooks: {
    // The first step of the chain: one that finishes well within the limit, but after the watch's first tick (250 ms).
    onRequest: () => (ex: Exchange) => (ex.headers['x-hang'] === 'slow' ? new Promise<void>((r) => setTimeout(r, LIMIT_MS / 2 + 100)) : undefined),
    // A step that never settles when asked to, in the phase where a body parser runs.
    parse: () => async (ex: Exchange) => {
      if (ex.headers['x-hang'] === 'parse') await new Promise(() => undefined);
      // Reads the body first: a slow upload is the request's arrival, not this step's.
      if (ex.headers['x-hang'] === 'after-body') {
        await ex.readBody();
        await new Promise(() => undefined);
      }
    },
  },
});

const slowService = `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 2000 }, handle: () => { const until = Date.now() + ${LIMIT_MS * 2}; while (Date.now() < until) {} return 'slow but within its own limit'; } });`;

const start = () =>
  startKernel({
    config: `
server: { step_timeout_ms: ${LIMIT_MS}, request_timeout_ms: 5000 }
channel_rest:
  - { name: hello, url_path: /hello, service: hello, security: none }
  - { name: slow, url_path: /slow, service: slow, security: none }
`,
    services: { 'hello.js': `import { service } from 'svc/sdk';\nexport default service({ handle: () => 'hello' });`, 'slow.js': slowService },
    extraPlugins: [hanging],
    listen: true,
  });

let k: TestKernel;
beforeAll(async () => {
  k = await start();
}, 60_000);
afterAll(() => k?.close());

async function timed(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown>; cid: string | null; ms: number }> {
  const started = Date.now();
  const res = await fetch(k.url + path, { headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, cid: res.headers.get('x-svc-cid'), ms: Date.now() - started };
}

describe('a chain step that never finishes', () => {
  it('a plugin hook: 503 STEP_TIMEOUT with the CID, after the limit', async () => {
    const r = await timed('/hello', { 'x-hang': 'parse' });
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ result: 'Error', cid: r.cid, details: 'A request step did not finish in time' });
    expect(r.ms).toBeGreaterThanOrEqual(LIMIT_MS - 300);
    expect(r.ms).toBeLessThan(LIMIT_MS * 4);
  });

  it("a plugin route's handler: the same", async () => {
    const r = await timed('/_hang/route');
    expect(r.status).toBe(503);
    expect(r.body.details).toBe('A request step did not finish in time');
  });

  it('the service call is not cut by it: it has its own limit', async () => {
    const r = await timed('/slow');
    expect(r.status).toBe(200);
    expect(r.body).toBe('slow but within its own limit');
  });

  it('a body still arriving is not cut by it (request_timeout_ms covers that); the step is, once the body is in', async () => {
    const started = Date.now();
    // The body's last byte comes after longer than the step limit, well within the request limit.
    const { response } = await rawHttp(k.url!, 'POST /hello HTTP/1.1\r\nHost: x\r\nX-Hang: after-body\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{', { later: { text: '}', afterMs: LIMIT_MS * 2 } });
    expect(response.split(' ')[1]).toBe('503');
    // Cut after the body arrived, not while it was arriving.
    expect(Date.now() - started).toBeGreaterThanOrEqual(LIMIT_MS * 2 + LIMIT_MS - 300);
  });

  it('other requests are served meanwhile and after', async () => {
    const [hung, ok] = await Promise.all([timed('/hello', { 'x-hang': 'parse' }), timed('/hello')]);
    expect(hung.status).toBe(503);
    expect(ok).toMatchObject({ status: 200, body: 'hello' });
  });
});

describe('the first step after a quiet start', () => {
  let quiet: TestKernel;
  beforeAll(async () => {
    quiet = await start();
  }, 60_000);
  afterAll(() => quiet?.close());

  // The watch's coarse clock was read once, when the server started: the first step awaited after
  // a quiet spell longer than the limit got a deadline already past and was cut at the first tick.
  it('gets the whole limit, however long the server sat idle before it', async () => {
    await new Promise((r) => setTimeout(r, LIMIT_MS * 2));
    const r = await fetch(quiet.url + '/hello', { headers: { 'x-hang': 'slow' } });
    expect(r.status).toBe(200);
    expect(await r.json()).toBe('hello');
  });
});
