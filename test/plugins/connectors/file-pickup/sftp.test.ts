import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { sftpFolder, testServers } from '../../../helpers/servers.ts';
import type { Upstream } from '../../outgoing/rest/upstream.ts';
import { sessions, sftpStandIn } from './sftp-standin.ts';
import { counter, deadLetters, drop, heard, outgoingCounter, poll, RECORD } from './support.ts';

/** channel_file on an SFTP folder of the real sshd (through the connectors.sftp capability). */
let k: TestKernel;
let up: Upstream;
const folder = { main: sftpFolder('pickup'), drop: sftpFolder('pickup-drop') };

beforeAll(async () => {
  await testServers();
  up = await counter();
  const channel = (name: string, remote: string, extra: Record<string, unknown> = {}) =>
    `  - ${JSON.stringify({ name, source: { sftp: { connection: 'partner', path: remote } }, service: 'record', pattern: '*.csv', poll: { every: '1h' }, stable: { polls: 1 }, delivery: { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10 }, ...extra })}`;
  const config = [outgoingCounter(up), 'sftp_connection:\n  - { name: partner }', 'channel_file:', channel('sftp', folder.main.remote, { max_file_bytes: 10_000 }), channel('drop', folder.drop.remote)].join('\n');
  k = await startKernel({ config, services: { 'record.ts': RECORD }, extraPlugins: [sftpStandIn] });
});

afterAll(async () => {
  await k?.close();
  await up?.close();
  for (const f of Object.values(folder)) rmSync(f.local, { recursive: true, force: true });
});

const ran = (channel: string, name: string) => heard(up).filter((h) => h.source.name === channel && h.name === name);

describe('channel_file (SFTP folder)', () => {
  it('runs the service once per file, then moves it to done on the server; too big goes to error', async () => {
    drop(folder.main.local, 'a.csv', 'id;n\n1;2\n');
    drop(folder.main.local, 'big.csv', Buffer.alloc(20_000, 65));
    drop(folder.main.local, 'skip.txt', 'not matched');
    expect(await poll(k, 'sftp')).toMatchObject({ listed: 2, taken: 2 });
    expect(ran('sftp', 'a.csv').map((h) => h.raw)).toEqual(['id;n\n1;2\n']);
    expect(ran('sftp', 'big.csv')).toHaveLength(0);
    expect(readdirSync(join(folder.main.local, 'done'))).toEqual(['a.csv']);
    expect(readdirSync(join(folder.main.local, 'error'))).toEqual(['big.csv']);
    expect((await deadLetters(k, 'sftp'))[0]!.lastError).toMatchObject({ kind: 'PAYLOAD_TOO_LARGE' });
    expect(await poll(k, 'sftp')).toMatchObject({ listed: 0 });
    expect(ran('sftp', 'a.csv')).toHaveLength(1);
    expect(existsSync(join(folder.main.local, 'skip.txt'))).toBe(true);
  });

  it('leaves a file whose connection dropped mid-read unclaimed, and takes it once at the next poll', async () => {
    drop(folder.drop.local, 'large.csv', Buffer.alloc(40 * 1024 * 1024, 66));
    const cut = setInterval(() => {
      // Once the poll's session is reading, end it under the read: the server sees the connection go.
      for (const s of sessions) void s.end().catch(() => {});
    }, 30);
    const first = await poll(k, 'drop');
    clearInterval(cut);
    expect(first.taken).toBe(0);
    expect(ran('drop', 'large.csv')).toHaveLength(0);
    expect(existsSync(join(folder.drop.local, 'large.csv'))).toBe(true);
    expect(await poll(k, 'drop')).toMatchObject({ taken: 1 });
    expect(ran('drop', 'large.csv').map((h) => h.raw)).toEqual([`(${40 * 1024 * 1024} bytes)`]);
    expect(readdirSync(join(folder.drop.local, 'done'))).toEqual(['large.csv']);
    const report = k.kernel.api.connections().find((c) => c.name === 'drop')!;
    expect(report.state).toBe('up');
    // The cut hit the read (the file was claimed, then released), not the listing.
    expect(report.meter.counts.get('pickup error')).toBe(1);
  });
});
