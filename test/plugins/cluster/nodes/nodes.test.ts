import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendControl } from '../../../../kernel/control.ts';
import { startObserved, type ObservedKernel } from '../../observe/support.ts';

/** The nodes plugin in a running server: /ready says which node answered; cluster.nodes lists it. */
const OK = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`;
const CONFIG = 'channel_rest:\n  - { name: ok, url_path: /ok, service: ok, security: none }\n';

describe('a node', () => {
  let k: ObservedKernel;
  let firstId: string;
  const dir = mkdtempSync(join(tmpdir(), 'svc-nodes-'));
  beforeAll(async () => {
    k = await startObserved({ config: CONFIG, services: { 'ok.ts': OK }, dir, env: { SVC_NODE_NAME: 'edge-1' } });
  }, 30_000);
  afterAll(async () => {
    await k?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('names itself in /ready on both listeners', async () => {
    for (const base of [k.url, k.admin]) {
      const r = await fetch(`${base}/ready`);
      const body = (await r.json()) as { node: { id: string; name: string } };
      expect(r.status).toBe(200);
      expect(body.node).toEqual({ id: expect.stringMatching(/^[0-9a-f]{12}$/), name: 'edge-1' });
      firstId = body.node.id;
    }
  });

  it('lists itself through the cluster.nodes control op, and an earlier run of the same store as stopped', async () => {
    await k.close();
    k = await startObserved({ config: CONFIG + 'plugins:\n  nodes:\n    config: { name: edge-1b }\n', services: { 'ok.ts': OK }, dir, env: { SVC_NODE_NAME: 'ignored' } });
    const reply = await sendControl(join(k.kernel.dataDir, 'control.sock'), 'cluster.nodes', {});
    expect(reply?.ok).toBe(true);
    const { self, nodes } = reply!.value as { self: string; nodes: Array<Record<string, unknown>> };
    expect(nodes).toContainEqual(expect.objectContaining({ id: self, name: 'edge-1b', state: 'up', self: true }));
    expect(nodes).toContainEqual(expect.objectContaining({ id: firstId, name: 'edge-1', state: 'stopped', self: false }));
  });
});
