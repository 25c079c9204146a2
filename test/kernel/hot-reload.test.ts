import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../helpers/kernel.ts';

const version = (v: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ version: '${v}' }) });\n`;
const channels = (extra = '') => `channel_rest:\n  - { name: live, url_path: /live, service: live, security: none }\n${extra}`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: channels(), services: { 'live.ts': version('one') } });
});
afterAll(() => k?.close());

const get = async (url: string) => k.app.inject({ method: 'GET', url });

describe('hot deploy', () => {
  it('redeploys a changed service file without a restart', async () => {
    expect((await get('/live')).json()).toEqual({ version: 'one' });
    await k.writeService('live.ts', version('two'));
    expect((await get('/live')).json()).toEqual({ version: 'two' });
  });

  it('keeps the last good version when a change does not compile, and reports file, line and message', async () => {
    await k.writeService('live.ts', `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ version: 'three' } });\n`);
    expect((await get('/live')).json()).toEqual({ version: 'two' });
    expect(k.kernel.services.errors.get('live')).toMatch(/^live\.ts:2:\d+: /);
    await k.writeService('live.ts', version('four'));
    expect((await get('/live')).json()).toEqual({ version: 'four' });
    expect(k.kernel.services.errors.has('live')).toBe(false);
  });

  it('reports a service that throws while loading with its file, line and message', async () => {
    await k.writeService('live.js', `import { service } from 'svc/sdk';\nconst limit = 3;\nthrow new Error('config missing');\nexport default service({ handle: () => limit });\n`);
    expect(k.kernel.services.errors.get('live')).toBe('live.js:3:7: config missing');
    expect((await get('/live')).json()).toEqual({ version: 'four' });
    await k.removeService('live.js');
  });

  it('deploys a new file and undeploys a removed one', async () => {
    await k.writeConfig(channels(`  - { name: fresh, url_path: /fresh, service: fresh, security: none }\n`));
    expect((await get('/fresh')).statusCode).toBe(500);
    await k.writeService('fresh.js', version('fresh'));
    expect((await get('/fresh')).json()).toEqual({ version: 'fresh' });
    await k.removeService('fresh.js');
    const res = await get('/fresh');
    expect(res.statusCode).toBe(500);
    expect(res.json().details).toBe("Service 'fresh' is not deployed");
  });

  it('does not drop in-flight requests while redeploying', async () => {
    await k.writeService('slow.js', `import { service } from 'svc/sdk';\nexport default service({ async handle() { let x = 0; for (let i = 0; i < 3e7; i++) x += i; return { x: x > 0 }; } });\n`);
    await k.writeConfig(channels(`  - { name: slow, url_path: /slow, service: slow, security: none }\n`));
    const inflight = Array.from({ length: 4 }, () => get('/slow'));
    await k.writeService('slow.js', `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ x: 'new' }) });\n`);
    for (const r of await Promise.all(inflight)) expect(r.statusCode).toBe(200);
    expect((await get('/slow')).json()).toEqual({ x: 'new' });
  });
});

describe('hot config reload', () => {
  it('applies a changed channel at once', async () => {
    expect(await k.writeConfig(`channel_rest:\n  - { name: live, url_path: /moved, service: live, security: none }\n`)).toBe(true);
    expect((await get('/moved')).statusCode).toBe(200);
    expect((await get('/live')).statusCode).toBe(404);
  });

  it('lets requests in flight finish on the config they started with', async () => {
    await k.writeService('slow2.js', `import { service } from 'svc/sdk';\nexport default service({ async handle() { let x = 0; for (let i = 0; i < 3e7; i++) x += i; return { done: x > 0 }; } });\n`);
    expect(await k.writeConfig(`channel_rest:\n  - { name: live, url_path: /moved, service: live, security: none }\n  - { name: slow2, url_path: /slow2, service: slow2, security: none }\n`)).toBe(true);
    const inflight = Array.from({ length: 4 }, () => get('/slow2'));
    await new Promise((r) => setTimeout(r, 20));
    expect(await k.writeConfig(`channel_rest:\n  - { name: live, url_path: /moved, service: live, security: none }\n`)).toBe(true);
    for (const r of await Promise.all(inflight)) expect(r.json()).toEqual({ done: true });
    expect((await get('/slow2')).statusCode).toBe(404);
  });

  it('refuses an invalid change and keeps the running config', async () => {
    expect(await k.writeConfig(`channel_rest:\n  - { name: live, url_path: no-slash, service: live, security: none }\n`)).toBe(false);
    expect((await get('/moved')).statusCode).toBe(200);
  });

  it('refuses a change whose paths conflict', async () => {
    const ok = await k.writeConfig(
      `channel_rest:\n  - { name: a, url_path: /x, service: live, security: none }\n  - { name: b, url_path: /x, service: live, security: none }\n`,
    );
    expect(ok).toBe(false);
    expect((await get('/moved')).statusCode).toBe(200);
  });

  it('picks up the file change by itself (file watching)', async () => {
    const { writeFileSync, readFileSync } = await import('node:fs');
    // The file holds the last (refused) text; keep its server block and replace the channels.
    const text = readFileSync(k.configPath, 'utf8').replace(/channel_rest:[\s\S]*/, 'channel_rest:\n  - { name: live, url_path: /watched, service: live, security: none }\n');
    writeFileSync(k.configPath, text);
    for (let i = 0; i < 50 && (await get('/watched')).statusCode !== 200; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await get('/watched')).statusCode).toBe(200);
  });
});
