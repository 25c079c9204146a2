import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../helpers/kernel.ts';

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({
    config: `channel_rest:\n  - name: hello\n    url_path: /hello/{name}\n    service: hello\n    security: none\n`,
    services: { 'hello.ts': `import { service, t } from 'svc/sdk';\nexport default service({ input: { name: t.string(), n: t.integer({ default: 1 }) }, handle: (ctx) => ({ hello: ctx.input.name, n: ctx.input.n }) });\n` },
  });
});
afterAll(() => k?.close());

describe('smoke', () => {
  it('routes to a sandboxed service', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/hello/ann?n=3' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ hello: 'ann', n: 3 });
    expect(res.headers['x-svc-cid']).toMatch(/^[0-9a-f]{22}$/);
  });
});
