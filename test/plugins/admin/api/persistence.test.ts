import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AdminClient, basic, callChannel, resourcePath, startAdmin, type AdminKernel } from './support.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-admin-persist-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fileConfig = (path: string) => `channel_rest:\n  - { name: shared, url_path: ${path}, service: echo, security: none }\n  - { name: gone, url_path: /gone, service: echo, security: none }\n`;

async function session(k: AdminKernel): Promise<AdminClient> {
  const c = new AdminClient(k.admin);
  expect((await c.login()).status).toBe(200);
  return c;
}

describe('admin edits persist and win over the file per resource', () => {
  it('survive a restart on the same data directory, secrets included (kept in the vault, not in the override rows)', async () => {
    const first = await startAdmin({ dir, config: fileConfig('/from-file') });
    try {
      const c = await session(first);
      expect((await c.post(resourcePath('security'), { name: 'partner', type: 'basic_auth', username: 'partner', password: 'kept-secret' })).status).toBe(201);
      expect((await c.post(resourcePath('channel_rest'), { name: 'added', url_path: '/added', service: 'echo', security: 'partner' })).status).toBe(201);
      expect((await c.put(resourcePath('channel_rest', 'shared'), { url_path: '/from-admin', service: 'echo', security: 'none' })).status).toBe(200);
      expect((await c.del(resourcePath('channel_rest', 'gone'))).status).toBe(204);
      const rows = await first.kernel.store.all<{ entry: string | null }>('SELECT entry FROM admin_override');
      expect(JSON.stringify(rows)).not.toContain('kept-secret');
    } finally {
      await first.close();
    }
    const second = await startAdmin({ dir, config: fileConfig('/from-file') });
    try {
      expect(await callChannel(second, '/added', basic('partner', 'kept-secret'))).toEqual({ status: 200, body: { user: 'partner' } });
      expect((await callChannel(second, '/from-admin')).status).toBe(200);
      expect((await callChannel(second, '/from-file')).status).toBe(404);
      expect((await callChannel(second, '/gone')).status).toBe(404);
      const c = await session(second);
      const items = (await c.get(resourcePath('channel_rest'))).body.items;
      expect(items.map((i: any) => [i.name, i.source])).toEqual([
        ['shared', 'admin'],
        ['added', 'admin'],
      ]);
      // Starting with a file whose version of an overridden resource differs: a warning names it.
      expect(second.logs).toContainEqual(expect.objectContaining({ section: 'channel_rest', name: 'shared', msg: expect.stringContaining('admin override wins') }));
    } finally {
      await second.close();
    }
  });

  it('a file change to an overridden resource is ignored with a warning; removing the override brings the file back', async () => {
    const k = await startAdmin({ dir, config: fileConfig('/from-file') });
    try {
      const warnings = () => k.logs.filter((l) => String(l.msg).includes('admin override wins') && l.name === 'shared').length;
      const before = warnings();
      expect(await k.writeConfig(fileConfig('/edited-in-file'))).toBe(true);
      expect(warnings()).toBe(before + 1);
      expect((await callChannel(k, '/edited-in-file')).status).toBe(404);
      expect((await callChannel(k, '/from-admin')).status).toBe(200);
      const c = await session(k);
      expect((await c.del('/admin/api/overrides/channel_rest/shared')).status).toBe(204);
      expect((await callChannel(k, '/edited-in-file')).status).toBe(200);
      expect((await callChannel(k, '/from-admin')).status).toBe(404);
      expect((await c.get(resourcePath('channel_rest', 'shared'))).body.source).toBe('file');
      expect((await c.del('/admin/api/overrides/channel_rest/shared')).status).toBe(404);
    } finally {
      await k.close();
    }
  });
});
