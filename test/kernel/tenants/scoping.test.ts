import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedVmAdvisory } from '../../../kernel/sandbox/ivm.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/** Runs the SDK calls the payload lists and answers with each one's value or the error it threw. */
const PROBE = `import { cache, invoke, outgoing, service } from 'svc/sdk';
export default service({
  async POST(ctx) {
    const out = [];
    for (const [kind, name, ...args] of ctx.payload.calls) {
      try {
        if (kind === 'cache.set') out.push(await cache(name).set(args[0], args[1]));
        else if (kind === 'cache.get') out.push(await cache(name).get(args[0]));
        else if (kind === 'invoke') out.push(await invoke(name, {}));
        else if (kind === 'outgoing') out.push((await outgoing(name).get(ctx.cid)).data);
      } catch (e) {
        out.push({ error: e.kind ?? e.name, status: e.status });
      }
    }
    return out;
  },
});`;
const helper = (who: string) => `import { service } from 'svc/sdk';
export default service({ invokableBy: ['probe'], handle: () => ({ who: ${JSON.stringify(who)} }) });`;

/** One upstream per tenant: the answer says whose connection the call went through. */
function upstream(who: string): Promise<Server> {
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ upstream: who }));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const advisory = isolatedVmAdvisory();

describe.runIf(advisory === undefined)("a tenant's services reach only their tenant's resources", () => {
  let root: string;
  let k: TestKernel;
  let servers: Server[];
  const calls = async (url: string, ...list: unknown[][]) => {
    const res = await k.app.inject({ method: 'POST', url, payload: { calls: list } });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as unknown[];
  };

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'svc-tenant-scope-'));
    servers = [await upstream('acme'), await upstream('platform')];
    const port = (s: Server) => (s.address() as AddressInfo).port;
    const tenant = (name: string, extra = '') => {
      mkdirSync(join(root, name), { recursive: true });
      writeFileSync(join(root, name, 'probe.ts'), PROBE);
      writeFileSync(join(root, name, 'helper.ts'), helper(name));
      return `  - name: ${name}
    services_dir: ${join(root, name)}
    config:
      channel_rest: [{ name: probe, url_path: /probe, service: probe, security: none }]
      cache: [{ name: store, services: [probe] }]
${extra}`;
    };
    k = await startKernel({
      config: `
tenants:
${tenant('acme', `      outgoing_rest: [{ name: api, address: "http://127.0.0.1:${port(servers[0]!)}" }]`)}
${tenant('globex')}
cache: [{ name: store, services: [probe] }]
outgoing_rest: [{ name: api, address: "http://127.0.0.1:${port(servers[1]!)}" }]
channel_rest: [{ name: probe, url_path: /probe, service: probe, security: none }]
`,
      services: { 'probe.ts': PROBE, 'helper.ts': helper('platform') },
    });
  });
  afterAll(async () => {
    await k?.close();
    for (const s of servers ?? []) s.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('keeps caches of the same name apart, and cannot name another tenant\'s', async () => {
    await calls('/t/acme/probe', ['cache.set', 'store', 'k', 'acme']);
    await calls('/t/globex/probe', ['cache.set', 'store', 'k', 'globex']);
    await calls('/probe', ['cache.set', 'store', 'k', 'platform']);
    expect(await calls('/t/acme/probe', ['cache.get', 'store', 'k'], ['cache.get', 'globex/store', 'k'])).toEqual(['acme', { error: 'NotFound', status: 404 }]);
    expect(await calls('/t/globex/probe', ['cache.get', 'store', 'k'])).toEqual(['globex']);
    expect(await calls('/probe', ['cache.get', 'store', 'k'])).toEqual(['platform']);
  });

  it("invokes its own tenant's services only; invokableBy names callers of the tenant by their short names", async () => {
    expect(await calls('/t/acme/probe', ['invoke', 'helper'], ['invoke', 'globex/helper'])).toEqual([{ who: 'acme' }, { error: 'NotFound', status: 404 }]);
    expect(await calls('/t/globex/probe', ['invoke', 'helper'])).toEqual([{ who: 'globex' }]);
    // The platform is trusted and may name a tenant's service, but the tenant's invokableBy still decides.
    expect(await calls('/probe', ['invoke', 'helper'], ['invoke', 'acme/helper'])).toEqual([{ who: 'platform' }, { error: 'Forbidden', status: 403 }]);
  });

  it("calls out through its tenant's outgoing connection; a tenant without one does not reach the platform's", async () => {
    expect(await calls('/t/acme/probe', ['outgoing', 'api'])).toEqual([{ upstream: 'acme' }]);
    expect(await calls('/probe', ['outgoing', 'api'])).toEqual([{ upstream: 'platform' }]);
    expect(await calls('/t/globex/probe', ['outgoing', 'api'])).toEqual([{ error: 'Error' }]);
  });
});
