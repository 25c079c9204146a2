import { afterAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { makeProject, startCli, type CliServer } from '../../../helpers/cli.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { PG_SCHEMA_PREFIX, PG_URL, dropPgSchemas, pgAnswers, pgSchemaUrl } from '../../../helpers/store.ts';
import { json, Upstream } from '../../outgoing/rest/upstream.ts';

/**
 * Several nodes on one PostgreSQL: an event accepted by a node that dies (kill -9) mid-attempt is
 * taken over by another node once the first is no longer up, and runs there to completion.
 */
const pgRuns = process.env.CI === 'true' || (await pgAnswers());
if (!pgRuns) console.warn(`PostgreSQL does not answer at ${PG_URL}: the use-queue cluster tests are skipped`);
const SUITE = `${PG_SCHEMA_PREFIX}queue_cluster_`;
afterAll(() => dropPgSchemas(SUITE));

/** Tells the upstream which attempt of which event this is. */
const HIT = `import { service, outgoing } from 'svc/sdk';
export default service({
  async handle(ctx) {
    const r = await outgoing('upstream').get(ctx.cid, { params: { event: ctx.delivery!.cid, attempt: ctx.delivery!.attempt } });
    if (r.status !== 200) throw new Error('upstream said ' + r.status);
    return { ok: true };
  },
});
`;

function config(storeUrl: string, upstreamPort: number): string {
  return [
    'server:',
    `  store: "${storeUrl}"`,
    'channel_rest:',
    '  - { name: work, url_path: /work, service: hit, security: none, use_queue: true, delivery: { max_attempts: 3, base_delay_ms: 0, jitter: false } }',
    'outgoing_rest:',
    `  - { name: upstream, address: "http://127.0.0.1:${upstreamPort}", url_path: /hit, timeout_ms: 60000 }`,
    'plugins:',
    '  nodes: { config: { heartbeat_ms: 200, down_after_ms: 1000 } }',
    '  use-queue: { config: { adopt_every_ms: 200 } }',
    '',
  ].join('\n');
}

describe.runIf(pgRuns)('use queue on several nodes', () => {
  it('a node killed during an attempt: another node takes the event over and runs it', async () => {
    const upstream = new Upstream();
    let release: (() => void) | undefined;
    // The first attempt hangs (its node is killed meanwhile); later ones succeed.
    upstream.route('/hit', (_req, res, _body, hit) => {
      if (hit === 1) release = () => res.destroy();
      else json(res, 200, { ok: true });
    });
    await upstream.start();
    const storeUrl = await pgSchemaUrl(SUITE + 'takeover');
    const text = config(storeUrl, upstream.port);
    let a: CliServer | undefined;
    let b: TestKernel | undefined;
    try {
      a = await startCli(makeProject(text, { 'hit.ts': HIT }), { SVC_NODE_NAME: 'node-a' });
      b = await startKernel({ config: text, services: { 'hit.ts': HIT }, env: { SVC_NODE_NAME: 'node-b' } });

      const accepted = await fetch(`${a.url}/work`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
      expect(accepted.status).toBe(200);
      const { cid } = (await accepted.json()) as { cid: string };
      await waitFor('node A to start the attempt', () => upstream.hits('/hit').length === 1);
      expect(upstream.hits('/hit')[0]!.url).toContain(`event=${cid}`);

      a.proc.kill('SIGKILL');
      await new Promise((r) => a!.proc.once('exit', r));
      release?.();

      // Node B notices A is down (1 s without a heartbeat), records the cut attempt and runs it again.
      await waitFor('node B to run the event', () => upstream.hits('/hit').length >= 2, 20_000);
      const second = new URL(upstream.hits('/hit')[1]!.url, 'http://x');
      expect(second.searchParams.get('event')).toBe(cid);
      expect(second.searchParams.get('attempt')).toBe('2');
      const nodes = (await b.kernel.runControl('cluster.nodes', {})) as { nodes: Array<{ name: string; state: string }> };
      expect(nodes.nodes).toContainEqual(expect.objectContaining({ name: 'node-a', state: 'down' }));
      await expect
        .poll(async () => (await b!.kernel.runControl('queue.list', { limit: 10 })) as unknown[], { timeout: 10_000 })
        .toEqual([]);
      expect(upstream.hits('/hit')).toHaveLength(2);
    } finally {
      if (a && a.proc.exitCode === null) a.proc.kill('SIGKILL');
      await b?.close();
      await upstream.close();
    }
  }, 60_000);

  it('events accepted on two nodes get distinct ids, and each runs once', async () => {
    const upstream = new Upstream();
    upstream.route('/hit', (_req, res) => json(res, 200, { ok: true }));
    await upstream.start();
    const text = config(await pgSchemaUrl(SUITE + 'ids'), upstream.port);
    const a = await startKernel({ config: text, services: { 'hit.ts': HIT }, listen: true });
    const b = await startKernel({ config: text, services: { 'hit.ts': HIT }, listen: true });
    try {
      const post = (url: string) => fetch(`${url}/work`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then(async (r) => ((await r.json()) as { cid: string }).cid);
      const cids = await Promise.all(Array.from({ length: 40 }, (_, i) => post(i % 2 ? a.url! : b.url!)));
      await waitFor('every event to run', () => upstream.hits('/hit').length >= 40, 20_000);
      await new Promise((r) => setTimeout(r, 300));
      const ran = upstream.hits('/hit').map((h) => new URL(h.url, 'http://x').searchParams.get('event'));
      expect(ran.sort()).toEqual([...cids].sort());
    } finally {
      await a.close();
      await b.close();
      await upstream.close();
    }
  }, 60_000);
});
