import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedVmAdvisory } from '../../../kernel/sandbox/ivm.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/** Burns the CPU it is asked to, in ms, then answers; the relay may invoke it. */
const BURN = `import { service } from 'svc/sdk';
export default service({ invokableBy: ['relay'], handle(ctx) { const until = Date.now() + Number(ctx.input.ms ?? 0); let n = 0; while (Date.now() < until) n++; return { n }; } });`;

/** Invokes burn until its tenant's CPU quota refuses an invoke; answers what the refusal said. */
const RELAY = `import { service, invoke } from 'svc/sdk';
export default service({ limits: { timeoutMs: 20000 }, async handle() {
  for (let i = 0; i < 100; i++) {
    try { await invoke('burn', { ms: 50 }); }
    catch (e) { return { after: i, name: e.name, status: e.status, code: e.code, retryAfterSeconds: e.retryAfterSeconds, message: e.message }; }
  }
  return { after: 100 };
} });`;

describe.runIf(isolatedVmAdvisory() === undefined)('tenant quotas through channels', () => {
  let root: string;
  let k: TestKernel;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'svc-tenant-quota-'));
    for (const t of ['greedy', 'calm', 'metered']) {
      mkdirSync(join(root, t), { recursive: true });
      writeFileSync(join(root, t, 'burn.ts'), BURN);
      writeFileSync(join(root, t, 'relay.ts'), RELAY);
    }
    const channels = 'channel_rest: [{ name: burn, url_path: /burn, service: burn, security: none }, { name: relay, url_path: /relay, service: relay, security: none }]';
    k = await startKernel({
      config: `
tenants:
  - { name: greedy, services_dir: ${join(root, 'greedy')}, processes: 1, quotas: { cpu_ms_per_minute: 300 }, config: { ${channels} } }
  - { name: calm, services_dir: ${join(root, 'calm')}, config: { ${channels} } }
  - { name: metered, services_dir: ${join(root, 'metered')}, quotas: { cpu_ms_per_minute: 300 }, config: { ${channels} } }
`,
    });
  });
  afterAll(async () => {
    await k?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("refuses a tenant's calls with 429 TENANT_QUOTA once its CPU per minute is used, with the CID and Retry-After; the other tenant keeps its service", async () => {
    let refused: Awaited<ReturnType<typeof k.app.inject>> | undefined;
    for (let i = 0; i < 20 && !refused; i++) {
      const res = await k.app.inject({ method: 'GET', url: '/t/greedy/burn?ms=100' });
      if (res.statusCode === 429) refused = res;
      else expect(res.statusCode, res.body).toBe(200);
    }
    expect(refused, 'no call was refused').toBeDefined();
    expect(refused!.json()).toMatchObject({ result: 'Error', cid: refused!.headers['x-svc-cid'], details: expect.stringMatching(/cpu_ms_per_minute/) });
    expect(Number(refused!.headers['retry-after'])).toBeGreaterThan(0);
    const calm = await k.app.inject({ method: 'GET', url: '/t/calm/burn?ms=50' });
    expect(calm.statusCode, calm.body).toBe(200);
    const stats = k.kernel.api.sandboxStats();
    expect(JSON.stringify(stats)).toMatch(/greedy/);
  });

  it('refuses an invoke past the quota inside the calling service: TooManyRequests with TENANT_QUOTA and its Retry-After', async () => {
    // The relay starts within the quota and uses it up through the calls it invokes.
    const res = await k.app.inject({ method: 'GET', url: '/t/metered/relay' });
    expect(res.statusCode, res.body).toBe(200);
    const refused = res.json() as { after: number; name: string; status: number; code: string; retryAfterSeconds: number; message: string };
    expect(refused).toMatchObject({ name: 'TooManyRequests', status: 429, code: 'TENANT_QUOTA', message: expect.stringMatching(/^Service 'metered\/burn': Quota cpu_ms_per_minute reached/) });
    expect(refused.after).toBeLessThan(100);
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
  });
});
