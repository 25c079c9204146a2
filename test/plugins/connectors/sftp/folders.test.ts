import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KernelApi } from '../../../../sdk/plugin/index.ts';
import '../../../../plugins/capabilities.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { sftpFolder, testServers } from '../../../helpers/servers.ts';
import { capturePlugin, entry } from './support.ts';

/** The `connectors.sftp` capability the file pickup polls SFTP folders through, against the test sshd. */
let k: TestKernel;
let api!: KernelApi;
let folder: { remote: string; local: string };

beforeAll(async () => {
  await testServers();
  folder = sftpFolder('cap');
  mkdirSync(join(folder.local, 'outbound'));
  const owner = statSync(folder.local);
  chownSync(join(folder.local, 'outbound'), owner.uid, owner.gid);
  const config = `sftp_connection:\n${entry('partner', folder.remote)}${entry('bad_key', folder.remote, { host_key: 'SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })}`;
  k = await startKernel({ config, extraPlugins: [capturePlugin((kernel) => (api = kernel))] });
});
afterAll(() => k?.close());

const folders = () => api.lookup('connectors.sftp')!;

describe('connectors.sftp', () => {
  it('knows its connections and opens a folder under the root', async () => {
    expect(folders().has('partner')).toBe(true);
    expect(folders().has('nobody')).toBe(false);
    await expect(folders().open('nobody', 'outbound')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const f = await folders().open('partner', 'outbound');
    expect(f.describe).toBe(`sftp://partner/${folder.remote}/outbound`);
    await f.release();
  });

  it('lists (symlinks as symlink, not followed), reads, renames replacing the target, removes, makes folders', async () => {
    const dir = join(folder.local, 'outbound');
    writeFileSync(join(dir, 'a.csv'), 'a;1');
    writeFileSync(join(dir, 'b.csv'), 'b;2');
    symlinkSync('/etc/passwd', join(dir, 'link.csv'));
    const f = await folders().open('partner', 'outbound');
    try {
      const listed = await f.list('');
      expect(listed.map((e) => [e.name, e.type])).toEqual([
        ['a.csv', 'file'],
        ['b.csv', 'file'],
        ['link.csv', 'symlink'],
      ]);
      expect(listed[0]!.mtimeMs).toBeGreaterThan(Date.now() - 3_600_000);
      expect((await f.read('a.csv', 100)).toString()).toBe('a;1');
      await expect(f.read('a.csv', 2)).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
      await expect(f.read('link.csv', 10_000)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
      await f.mkdir('done/2024/01');
      await f.mkdir('done/2024/01');
      await f.rename('a.csv', 'done/2024/01/x.csv');
      await f.rename('b.csv', 'done/2024/01/x.csv');
      expect(readFileSync(join(dir, 'done/2024/01/x.csv'), 'utf8')).toBe('b;2');
      expect(await f.exists('done/2024/01/x.csv')).toBe(true);
      expect(await f.exists('a.csv')).toBe(false);
      expect(await f.exists('nowhere/a.csv')).toBe(false);
      await f.remove('link.csv');
      expect(existsSync('/etc/passwd')).toBe(true);
      await expect(f.remove('gone.csv')).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(f.list('../..')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
      await expect(f.rename('done', '/tmp/escaped')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
      expect(readdirSync(dir)).toEqual(['done']);
    } finally {
      await f.release();
    }
  });

  it('refuses a root leaving the connection root, or a symlink as root', async () => {
    symlinkSync('/tmp', join(folder.local, 'tmp-link'));
    await expect(folders().open('partner', '../')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(folders().open('partner', 'tmp-link')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('is SERVICE_UNAVAILABLE when the host key differs', async () => {
    await expect(folders().open('bad_key', '')).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: expect.stringContaining('host key mismatch') });
  });

  it('gives sessions back to the pool on release', async () => {
    const a = await folders().open('partner', '');
    await a.release();
    const report = () => api.connections().find((r) => r.kind === 'sftp' && r.name === 'partner')!;
    expect(report().pool).toMatchObject({ busy: 0, idle: 1 });
    const b = await folders().open('partner', '');
    expect(report().pool).toMatchObject({ busy: 1, idle: 0 });
    await b.release();
  });
});
