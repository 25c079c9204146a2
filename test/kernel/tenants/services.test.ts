import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_MAJOR } from '../../../kernel/platform/native.ts';
import { isolatedVmAdvisory } from '../../../kernel/sandbox/ivm.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/** A service that says which tenant's copy answered: two tenants each have an `orders`. */
const whoAmI = (who: string) => `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => ({ who: ${JSON.stringify(who)}, id: ctx.input.id ?? null }) });`;

function tenantConfig(root: string, tenants: string[]): string {
  const list = tenants
    .map((t) => `  - name: ${t}\n    services_dir: ${join(root, t, 'services')}\n    config:\n      channel_rest:\n        - { name: orders, url_path: "/orders/{id}", service: orders, security: none }`)
    .join('\n');
  return `server: { sandbox: { workers: 1, tenant_workers: 1 } }\ntenants:\n${list}\nchannel_rest:\n  - { name: orders, url_path: /orders, service: orders, security: none }\n`;
}

function writeTenantService(root: string, tenant: string, who: string): void {
  mkdirSync(join(root, tenant, 'services'), { recursive: true });
  writeFileSync(join(root, tenant, 'services', 'orders.ts'), whoAmI(who));
}

const advisory = isolatedVmAdvisory();

describe.runIf(advisory !== undefined)(`tenants on Node ${NODE_MAJOR} (isolated-vm 5.0.4, GHSA-864f-rcv7-6rh4)`, () => {
  it('refuses a config with tenants at start, saying why and which Node to use, and warns once without tenants', async () => {
    const root = mkdtempSync(join(tmpdir(), 'svc-tenants-'));
    try {
      await expect(startKernel({ config: tenantConfig(root, ['acme']), services: { 'orders.ts': whoAmI('platform') } })).rejects.toThrow(/tenants: tenants need an isolated-vm line fixed for GHSA-864f-rcv7-6rh4 .* start svc with Node 22 or 24/);
      const logs: Array<Record<string, unknown>> = [];
      const k = await startKernel({ config: 'channel_rest: []', logs });
      try {
        await k.writeConfig('channel_rest: []\nserver: { log_level: info }');
        expect(logs.filter((l) => l.advisory === 'GHSA-864f-rcv7-6rh4')).toHaveLength(1);
        // Added later, through a reload, tenants are refused the same way and the running config stays.
        expect(await k.writeConfig(tenantConfig(root, ['acme']))).toBe(false);
      } finally {
        await k.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe.runIf(advisory === undefined)(`tenants' services on Node ${NODE_MAJOR}`, () => {
  let root: string;
  let k: TestKernel;
  const get = (url: string) => k.app.inject({ method: 'GET', url });

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'svc-tenants-'));
    writeTenantService(root, 'acme', 'acme');
    writeTenantService(root, 'globex', 'globex');
    k = await startKernel({ config: tenantConfig(root, ['acme', 'globex']), services: { 'orders.ts': whoAmI('platform') } });
  });
  afterAll(async () => {
    await k?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("deploys each tenant's files under qualified names, side by side with the platform's service of the same name", async () => {
    expect(k.kernel.services.names().sort()).toEqual(['acme/orders', 'globex/orders', 'orders']);
    // One platform process and one the tenants share (sandbox.tenant_workers), never the same.
    expect(k.kernel.pool.pids()).toHaveLength(2);
    expect((await get('/orders')).json()).toMatchObject({ who: 'platform' });
    expect((await get('/t/acme/orders/7')).json()).toEqual({ who: 'acme', id: '7' });
    expect((await get('/t/globex/orders/8')).json()).toEqual({ who: 'globex', id: '8' });
  });

  it("takes a tenant's file changes as the platform's: hot deploy and undeploy under its name", async () => {
    writeFileSync(join(root, 'acme', 'services', 'orders.ts'), whoAmI('acme v2'));
    await new Promise((r) => setTimeout(r, 150));
    await k.kernel.services.settled();
    expect((await get('/t/acme/orders/1')).json()).toMatchObject({ who: 'acme v2' });
    expect((await get('/t/globex/orders/1')).json()).toMatchObject({ who: 'globex' });
  });

  it('deploys a tenant added by a reload (its directory made if missing), and undeploys one removed', async () => {
    expect(await k.writeConfig(tenantConfig(root, ['acme', 'initech']))).toBe(true);
    expect(existsSync(join(root, 'initech', 'services'))).toBe(true);
    expect(k.kernel.services.names().sort()).toEqual(['acme/orders', 'orders']);
    const gone = await get('/t/globex/orders/1');
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toMatchObject({ cid: gone.headers['x-svc-cid'] });
    // initech's channel names a service it has not written yet: 500 with the CID, as for the platform.
    const missing = await get('/t/initech/orders/1');
    expect(missing.statusCode).toBe(500);
    expect(missing.json()).toMatchObject({ cid: missing.headers['x-svc-cid'] });
    writeTenantService(root, 'initech', 'initech');
    await new Promise((r) => setTimeout(r, 150));
    await k.kernel.services.settled();
    expect((await get('/t/initech/orders/2')).json()).toEqual({ who: 'initech', id: '2' });
  });

  it("applies a tenant's config file when it is saved, as the main file; a broken save leaves the running config", async () => {
    const file = join(root, 'initech.yaml');
    writeFileSync(file, 'channel_rest:\n  - { name: orders, url_path: "/v1/orders/{id}", service: orders, security: none }\n');
    expect(await k.writeConfig(`tenants:\n  - { name: initech, services_dir: ${join(root, 'initech', 'services')}, config_file: ${file} }\n`)).toBe(true);
    expect((await get('/t/initech/v1/orders/3')).json()).toEqual({ who: 'initech', id: '3' });
    writeFileSync(file, 'channel_rest:\n  - { name: orders, url_path: "/v2/orders/{id}", service: orders, security: none }\n');
    await expect.poll(async () => (await get('/t/initech/v2/orders/4')).statusCode, { timeout: 5_000 }).toBe(200);
    expect((await get('/t/initech/v1/orders/4')).statusCode).toBe(404);
    writeFileSync(file, 'channel_rest:\n  - { name: orders, url_path: "/v3/orders/{id}", service: orders, security: nobody }\n');
    // The refusal names the tenant's file and its place there, in the log and on the Dashboard's banner (with the line in that file).
    await expect.poll(() => k.kernel.configStore.refusal?.source, { timeout: 5_000 }).toBe(file);
    expect(k.kernel.configStore.refusal?.issues).toEqual([
      { message: `tenants[initech].config_file (${file}).channel_rest[0].security: no security definition or group named 'initech/nobody' (use 'none' for no server-side authentication)`, line: 2 },
    ]);
    expect((await get('/t/initech/v2/orders/5')).statusCode).toBe(200);
    writeFileSync(file, 'channel_rest:\n  - { name: orders, url_path: "/v3/orders/{id}", service: orders, security: none }\n');
    await expect.poll(async () => (await get('/t/initech/v3/orders/6')).statusCode, { timeout: 5_000 }).toBe(200);
    expect(k.kernel.configStore.refusal).toBeUndefined();
  });

  it("applies the main file and a tenant's file saved together (a deploy of both): neither save is lost to the other", async () => {
    const file = join(root, 'initech.yaml');
    writeFileSync(file, 'channel_rest:\n  - { name: orders, url_path: "/v4/orders/{id}", service: orders, security: none }\n');
    const main = (extra: string) => `tenants:\n  - { name: initech, services_dir: ${join(root, 'initech', 'services')}, config_file: ${file} }\n${extra}`;
    expect(await k.writeConfig(main(''))).toBe(true);
    await expect.poll(async () => (await get('/t/initech/v4/orders/7')).statusCode, { timeout: 5_000 }).toBe(200);
    // The main file first, the tenant's file within the same 50 ms: both apply.
    k.saveConfigFile(main('channel_rest:\n  - { name: orders, url_path: /orders, service: orders, security: none }\n'));
    writeFileSync(file, 'channel_rest:\n  - { name: orders, url_path: "/v5/orders/{id}", service: orders, security: none }\n');
    await expect.poll(async () => (await get('/t/initech/v5/orders/8')).statusCode, { timeout: 5_000 }).toBe(200);
    await expect.poll(async () => (await get('/orders')).statusCode, { timeout: 5_000 }).toBe(200);
    // And the other way round: the tenant's file first, then the main file.
    writeFileSync(file, 'channel_rest:\n  - { name: orders, url_path: "/v6/orders/{id}", service: orders, security: none }\n');
    k.saveConfigFile(main(''));
    await expect.poll(async () => (await get('/orders')).statusCode, { timeout: 5_000 }).toBe(404);
    await expect.poll(async () => (await get('/t/initech/v6/orders/9')).statusCode, { timeout: 5_000 }).toBe(200);
  });
});
