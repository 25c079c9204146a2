import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/cluster.ts';
import { startKernel, TENANTS_RUN_HERE, type TestKernel } from '../../helpers/kernel.ts';
import { PG_SCHEMA_PREFIX, PG_URL, dropPgSchemas, pgAnswers, pgSchemaUrl } from '../../helpers/store.ts';

/**
 * A tenant's service uploaded through the management plane reaches every node on PostgreSQL
 * (kernel/services/shared.ts): written into each node's own directory of that tenant, deployed
 * there; a node that declares the tenant later writes it before it deploys; a delete reaches
 * the others. The platform's service of the same name is another service.
 */
const pgRuns = process.env.CI === 'true' || (await pgAnswers());
if (!pgRuns) console.warn(`PostgreSQL does not answer at ${PG_URL}: the tenants' shared services test is skipped`);
const SUITE = `${PG_SCHEMA_PREFIX}tenant_shared_`;
afterAll(() => dropPgSchemas(SUITE));

const hello = (word: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ word: '${word}' }) });\n`;

/** One node: its own directory for acme's services, as each node has its own services_dir. */
function node(env: NodeJS.ProcessEnv): Promise<TestKernel> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-tenant-node-'));
  return startKernel({
    config: `
tenants:
  - name: acme
    services_dir: ${join(dir, 'acme')}
    config: { channel_rest: [{ name: hello, url_path: /hello, service: hello, security: none }] }
channel_rest:
  - { name: hello, url_path: /hello, service: hello, security: none }
`,
    services: { 'hello.ts': hello('platform') },
    listen: true,
    env,
  });
}

describe.runIf(pgRuns && TENANTS_RUN_HERE)("a tenant's uploaded services on two nodes", () => {
  it('serve on B once uploaded on A, are written by a node started later, and leave B when deleted on A', async () => {
    const env = { SVC_STORE: await pgSchemaUrl(`${SUITE}nodes`), SVC_VAULT_KEY: randomBytes(32).toString('base64') };
    const word = async (k: TestKernel, path: string) => ((await (await fetch(k.url! + path)).json()) as { word?: string }).word;
    const a = await node(env);
    const b = await node(env);
    try {
      const up = (await a.kernel.runControl('services.upload', { file: 'hello.ts', source: hello('acme one'), tenant: 'acme' })) as { name: string };
      expect(up.name).toBe('acme/hello');
      await until(async () => (await word(b, '/t/acme/hello')) === 'acme one', 3_000, "acme's hello on B");
      expect(await word(b, '/hello')).toBe('platform');
      const c = await node(env);
      try {
        expect(await word(c, '/t/acme/hello')).toBe('acme one');
      } finally {
        await c.close();
      }
      await a.kernel.runControl('services.delete', { name: 'acme/hello' });
      await until(() => b.kernel.services.get('acme/hello') === undefined, 3_000, "acme's hello undeployed on B");
      expect(b.kernel.services.get('hello')).toBeDefined();
    } finally {
      await a.close();
      await b.close();
    }
  }, 60_000);
});
