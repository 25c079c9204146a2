import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HeldCalls } from '../helpers/held-calls.ts';
import { startKernel, type TestKernel } from '../helpers/kernel.ts';
import { waitFor } from '../helpers/wait.ts';

/**
 * Hot deploy and hot config reload. Every test starts its own kernel (channel `live` at /live,
 * service `live` at version 'one') and sets up whatever else it reads, so each passes alone.
 * Slow calls wait on HeldCalls: they are provably in flight across the change, and end when
 * the test releases them.
 */

const version = (v: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ version: '${v}' }) });\n`;
/** Reports `tag` to the gate and waits for the test to release it, then answers `answer`. */
const held = (tag: string, answer: string) =>
  `import { service, outgoing } from 'svc/sdk';\nexport default service({ limits: { timeoutMs: 30000 }, async handle(ctx) { const res = await outgoing('gate').post(ctx.cid, { payload: { tag: '${tag}' } }); return { ...${answer}, released: res.ok }; } });\n`;

const gate = new HeldCalls();
beforeAll(() => gate.start());
afterAll(() => gate.close());

const LIVE = '  - { name: live, url_path: /live, service: live, security: none }';
/** The config with these channel lines, and the gate as an outgoing connection. */
const config = (...channels: string[]) => `channel_rest:\n${channels.join('\n')}\noutgoing_rest:\n  - ${gate.outgoing('gate')}\n`;

let k: TestKernel;
beforeEach(async () => {
  k = await startKernel({ config: config(LIVE), services: { 'live.ts': version('one') } });
});
afterEach(async () => {
  gate.dropHeld();
  await k?.close();
});

const get = async (url: string) => k.app.inject({ method: 'GET', url });

describe('hot deploy', () => {
  it('redeploys a changed service file without a restart', async () => {
    expect((await get('/live')).json()).toEqual({ version: 'one' });
    await k.writeService('live.ts', version('two'));
    expect((await get('/live')).json()).toEqual({ version: 'two' });
  });

  it('keeps the last good version when a change does not compile, and reports file, line and message', async () => {
    await k.writeService('live.ts', `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ version: 'broken' } });\n`);
    expect((await get('/live')).json()).toEqual({ version: 'one' });
    expect(k.kernel.services.errors.get('live')).toMatch(/^live\.ts:2:\d+: /);
    await k.writeService('live.ts', version('fixed'));
    expect((await get('/live')).json()).toEqual({ version: 'fixed' });
    expect(k.kernel.services.errors.has('live')).toBe(false);
  });

  it('reports a service that throws while loading with its file, line and message', async () => {
    await k.writeService('live.js', `import { service } from 'svc/sdk';\nconst limit = 3;\nthrow new Error('config missing');\nexport default service({ handle: () => limit });\n`);
    expect(k.kernel.services.errors.get('live')).toBe('live.js:3:7: config missing');
    expect((await get('/live')).json()).toEqual({ version: 'one' });
  });

  it('deploys a new file and undeploys a removed one', async () => {
    expect(await k.writeConfig(config(LIVE, '  - { name: fresh, url_path: /fresh, service: fresh, security: none }'))).toBe(true);
    expect((await get('/fresh')).statusCode).toBe(500);
    await k.writeService('fresh.js', version('fresh'));
    expect((await get('/fresh')).json()).toEqual({ version: 'fresh' });
    await k.removeService('fresh.js');
    const res = await get('/fresh');
    expect(res.statusCode).toBe(500);
    expect(res.json().details).toBe("Service 'fresh' is not deployed");
  });

  it('does not drop in-flight requests while redeploying: they finish on the version they started on', async () => {
    await k.writeService('slow.js', held('slow-v1', "{ version: 'v1' }"));
    expect(await k.writeConfig(config(LIVE, '  - { name: slow, url_path: /slow, service: slow, security: none }'))).toBe(true);
    const inflight = Array.from({ length: 4 }, () => get('/slow'));
    await gate.waitHeld('slow-v1', 4);
    await k.writeService('slow.js', version('v2'));
    // Redeployed while all four are still held: a new call gets the new version at once.
    expect((await get('/slow')).json()).toEqual({ version: 'v2' });
    expect(gate.release('slow-v1')).toBe(4);
    for (const r of await Promise.all(inflight)) {
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({ version: 'v1', released: true });
    }
  });
});

describe('hot config reload', () => {
  it('applies a changed channel at once', async () => {
    expect(await k.writeConfig(config('  - { name: live, url_path: /moved, service: live, security: none }'))).toBe(true);
    expect((await get('/moved')).statusCode).toBe(200);
    expect((await get('/live')).statusCode).toBe(404);
  });

  it('lets requests in flight finish on the config they started with', async () => {
    await k.writeService('slow2.js', held('slow2', '{ done: true }'));
    expect(await k.writeConfig(config(LIVE, '  - { name: slow2, url_path: /slow2, service: slow2, security: none }'))).toBe(true);
    const inflight = Array.from({ length: 4 }, () => get('/slow2'));
    await gate.waitHeld('slow2', 4);
    expect(await k.writeConfig(config(LIVE))).toBe(true);
    // The channel is gone for new requests while the four that started on it are still held.
    expect((await get('/slow2')).statusCode).toBe(404);
    expect(gate.release('slow2')).toBe(4);
    for (const r of await Promise.all(inflight)) {
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({ done: true, released: true });
    }
  });

  it('refuses an invalid change and keeps the running config', async () => {
    expect(await k.writeConfig(config('  - { name: live, url_path: no-slash, service: live, security: none }'))).toBe(false);
    expect((await get('/live')).statusCode).toBe(200);
  });

  it('refuses a change whose paths conflict', async () => {
    const ok = await k.writeConfig(config('  - { name: a, url_path: /x, service: live, security: none }', '  - { name: b, url_path: /x, service: live, security: none }'));
    expect(ok).toBe(false);
    expect((await get('/live')).statusCode).toBe(200);
    expect((await get('/x')).statusCode).toBe(404);
  });

  it('picks up the file change by itself (file watching)', async () => {
    // Only the file is written (no reload call): the kernel's watcher must notice.
    const doc = parse(readFileSync(k.configPath, 'utf8')) as Record<string, unknown>;
    doc.channel_rest = [{ name: 'live', url_path: '/watched', service: 'live', security: 'none' }];
    writeFileSync(k.configPath, stringify(doc));
    await waitFor('the watched config to be applied', async () => (await get('/watched')).statusCode === 200, 10_000);
    expect((await get('/live')).statusCode).toBe(404);
  });
});
