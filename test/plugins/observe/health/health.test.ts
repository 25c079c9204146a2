import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePlugin, type Plugin } from '../../../../sdk/plugin/index.ts';
import { ConfigError } from '../../../../kernel/config/store.ts';
import { json, Upstream } from '../../outgoing/rest/upstream.ts';
import { startObserved, type ObservedKernel } from '../support.ts';

/**
 * /health and /ready on both listeners, over real sockets: ready only once the server finished
 * starting, not while it drains, not while its store does not answer.
 */
const OK = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`;
const SLOW = `import { service, outgoing } from 'svc/sdk';\nexport default service({ async handle(ctx) { const r = await outgoing('slow').get(ctx.cid); return { status: r.status }; } });\n`;

interface Answer {
  status: number;
  cid: string | null;
  cacheControl: string | null;
  body: any;
}

async function ask(url: string, init?: RequestInit): Promise<Answer> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, cid: res.headers.get('x-svc-cid'), cacheControl: res.headers.get('cache-control'), body: text ? JSON.parse(text) : undefined };
}

/** The node that answered (plugins/cluster/nodes). */
const NODE = { id: expect.stringMatching(/^[0-9a-f]{12}$/), name: expect.any(String) };

const ALL_OK = [
  { name: 'startup', ok: true },
  { name: 'store', ok: true },
  { name: 'shutdown', ok: true },
];

describe('a started server', () => {
  let k: ObservedKernel;
  beforeAll(async () => {
    k = await startObserved({ config: 'channel_rest:\n  - { name: ok, url_path: /ok, service: ok, security: none }\n', services: { 'ok.ts': OK } });
  }, 30_000);
  afterAll(() => k?.close());

  it('is live and ready on the channel listener and on the admin listener', async () => {
    for (const base of [k.url, k.admin]) {
      const live = await ask(`${base}/health`);
      expect(live).toMatchObject({ status: 200, body: { status: 'ok' }, cacheControl: 'no-store' });
      expect(live.cid).toMatch(/^[0-9a-f]{22}$/);
      const ready = await ask(`${base}/ready`);
      expect(ready).toMatchObject({ status: 200, body: { status: 'ready', checks: ALL_OK }, cacheControl: 'no-store' });
      expect(ready.cid).toMatch(/^[0-9a-f]{22}$/);
    }
  });

  it('answers HEAD without a body, and other methods with 405 (channel listener) or 404 (admin)', async () => {
    const head = await fetch(`${k.url}/ready`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const post = await ask(`${k.url}/ready`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.body).toEqual({ result: 'Error', cid: post.cid, details: 'Method not allowed' });
    expect((await fetch(`${k.admin}/ready`, { method: 'HEAD' })).status).toBe(200);
    const adminPost = await ask(`${k.admin}/ready`, { method: 'POST' });
    expect(adminPost.status).toBe(404);
    expect(adminPost.body).toEqual({ result: 'Error', cid: adminPost.cid, details: 'Not found' });
  });

  it('refuses a config whose channel claims a probe path, naming it', async () => {
    const accepted = await k.writeConfig('channel_rest:\n  - { name: mine, url_path: /ready, service: ok, security: none }\n');
    expect(accepted).toBe(false);
    expect(k.logs.some((l) => JSON.stringify(l).includes("channel_rest[0].url_path: /ready is the health plugin's probe"))).toBe(true);
    expect((await ask(`${k.url}/ready`)).body.status).toBe('ready');
  });
});

describe('startup', () => {
  /** A plugin whose onListen asks both listeners from inside `svc start`: they are up, and start has not finished. */
  function prober(seen: Answer[], logs: Array<Record<string, unknown>>): Plugin {
    const listening = (pattern: RegExp) => logs.map((l) => pattern.exec(`${String(l.msg)} ${String(l.address ?? '')}`)?.[1]).find(Boolean);
    return definePlugin({
      name: 'zz-prober',
      kind: 'other',
      version: '1.0.0',
      sdk: '^1.1.0',
      configSchema: z.object({}).default({}),
      setup(kernel) {
        kernel.onListen(async () => {
          seen.push(await ask(`${listening(/^Server listening at (\S+)/)}/ready`));
          seen.push(await ask(`${listening(/^svc admin listening (\S+)/)}/ready`));
        });
      },
      hooks: {},
    });
  }

  it('is not ready until the server finished starting (both listeners up), ready after', async () => {
    const seen: Answer[] = [];
    const logs: Array<Record<string, unknown>> = [];
    const k = await startObserved({ config: '', logs, extraPlugins: [prober(seen, logs)] });
    try {
      expect(seen).toHaveLength(2);
      for (const answer of seen) {
        expect(answer.status).toBe(503);
        expect(answer.cid).toMatch(/^[0-9a-f]{22}$/);
        expect(answer.body).toEqual({
          result: 'Error',
          cid: answer.cid,
          details: 'Not ready: starting',
          checks: [{ name: 'startup', ok: false, reason: 'starting' }, ALL_OK[1], ALL_OK[2]],
          node: NODE,
        });
      }
      expect((await ask(`${k.url}/ready`)).status).toBe(200);
      expect((await ask(`${k.admin}/ready`)).status).toBe(200);
    } finally {
      await k.close();
    }
  }, 30_000);
});

describe('shutdown', () => {
  it('is not ready while requests in flight drain, and they still finish', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    const upstream = await new Upstream()
      .route('/', (_req, res) => {
        void held.then(() => json(res, 200, {}));
      })
      .start();
    const k = await startObserved({
      config: `channel_rest:\n  - { name: slow, url_path: /slow, service: slow, security: none }\noutgoing_rest:\n  - { name: slow, address: "http://127.0.0.1:${upstream.port}", timeout_ms: 10000 }\n`,
      services: { 'slow.ts': SLOW },
    });
    try {
      const inFlight = ask(`${k.url}/slow`);
      for (let i = 0; i < 100 && upstream.hits('/').length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(upstream.hits('/')).toHaveLength(1);
      const closing = k.kernel.close();
      const ready = await ask(`${k.admin}/ready`);
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ result: 'Error', cid: ready.cid, details: 'Not ready: draining', checks: [ALL_OK[0], ALL_OK[1], { name: 'shutdown', ok: false, reason: 'draining' }], node: NODE });
      // Still live: a draining server must not be killed for it.
      expect((await ask(`${k.admin}/health`)).status).toBe(200);
      release();
      expect((await inFlight).status).toBe(200);
      await closing;
    } finally {
      release();
      await k.close();
      await upstream.close();
    }
  }, 30_000);
});

describe('the store', () => {
  it('is not ready while the data store does not answer', async () => {
    const k = await startObserved({ config: '' });
    try {
      expect((await ask(`${k.url}/ready`)).status).toBe(200);
      await k.kernel.store.close();
      for (const base of [k.url, k.admin]) {
        const ready = await ask(`${base}/ready`);
        expect(ready.status).toBe(503);
        expect(ready.body).toEqual({ result: 'Error', cid: ready.cid, details: 'Not ready: store unreachable', checks: [ALL_OK[0], { name: 'store', ok: false, reason: 'store unreachable' }, ALL_OK[2]], node: NODE });
      }
      expect(k.logs.some((l) => l.msg === 'readiness: not ready' && String(l.store).length > 0)).toBe(true);
    } finally {
      await k.close();
    }
  }, 30_000);
});

describe('plugins.health.config.channel_listener: false', () => {
  it('leaves the paths to channels; the admin listener still probes', async () => {
    const k = await startObserved({
      config: `plugins:\n  health: { config: { channel_listener: false } }\nchannel_rest:\n  - { name: mine, url_path: /ready, service: ok, security: none }\n`,
      services: { 'ok.ts': OK },
    });
    try {
      expect((await ask(`${k.url}/ready`)).body).toEqual({ ok: true });
      expect((await ask(`${k.url}/health`)).status).toBe(404);
      expect((await ask(`${k.admin}/ready`)).body.status).toBe('ready');
    } finally {
      await k.close();
    }
  }, 30_000);

  it('refuses the paths for channels while on (the default), at startup too', async () => {
    const starting = startObserved({ config: 'channel_rest:\n  - { name: mine, url_path: /health, service: ok, security: none }\n', services: { 'ok.ts': OK } });
    await expect(starting).rejects.toThrow(ConfigError);
    await expect(starting).rejects.toThrow("/health is the health plugin's probe");
  });
});
