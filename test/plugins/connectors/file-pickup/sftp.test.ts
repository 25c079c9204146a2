import { existsSync, readdirSync, rmSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { SFTP, sftpFolder, sftpKeys, testServers } from '../../../helpers/servers.ts';
import type { Upstream } from '../../outgoing/rest/upstream.ts';
import { counter, deadLetters, drop, heard, outgoingCounter, poll, RECORD } from './support.ts';

/**
 * channel_file on SFTP folders of the real sshd, through the sftp plugin. The `drop` channel's
 * connection goes through a TCP relay the test can cut once a transfer is under way: a
 * connection dropped mid-read as the network would drop it.
 */
class CuttableRelay {
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  /** Cut every connection once this many bytes came from the server since armed. */
  private armedAt: number | undefined;
  private fromServer = 0;
  cuts = 0;
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((client) => {
      const upstream = createConnection(SFTP.port, SFTP.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => {
        this.fromServer += chunk.length;
        if (this.armedAt !== undefined && this.fromServer - this.armedAt > 1_000_000) this.cut();
      });
      upstream.pipe(client);
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  arm(): void {
    this.armedAt = this.fromServer;
  }

  private cut(): void {
    this.armedAt = undefined;
    this.cuts++;
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

let k: TestKernel;
let up: Upstream;
let relay: CuttableRelay;
const folder = { main: sftpFolder('pickup'), drop: sftpFolder('pickup-drop') };

beforeAll(async () => {
  await testServers();
  up = await counter();
  relay = await new CuttableRelay().start();
  const conn = (name: string, port: number) => `  - ${JSON.stringify({ name, host: SFTP.host, port, username: SFTP.username, password: SFTP.password, host_key: sftpKeys().hostKey, connect_timeout_ms: 5000 })}`;
  const channel = (name: string, connection: string, remote: string, extra: Record<string, unknown> = {}) =>
    `  - ${JSON.stringify({ name, source: { sftp: { connection, path: remote } }, service: 'record', pattern: '*.csv', poll: { every: '1h' }, stable: { polls: 1 }, delivery: { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10 }, ...extra })}`;
  const config = [
    outgoingCounter(up),
    'sftp_connection:',
    conn('partner', SFTP.port),
    conn('flaky', relay.port),
    'channel_file:',
    channel('sftp', 'partner', folder.main.remote, { max_file_bytes: 10_000 }),
    channel('drop', 'flaky', folder.drop.remote),
  ].join('\n');
  k = await startKernel({ config, services: { 'record.ts': RECORD } });
});

afterAll(async () => {
  await k?.close();
  await up?.close();
  await relay?.close();
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
    drop(folder.drop.local, 'large.csv', Buffer.alloc(20 * 1024 * 1024, 66));
    relay.arm();
    const first = await poll(k, 'drop');
    expect(relay.cuts).toBe(1);
    expect(first.taken).toBe(0);
    expect(ran('drop', 'large.csv')).toHaveLength(0);
    expect(existsSync(join(folder.drop.local, 'large.csv'))).toBe(true);
    await expect.poll(async () => (await poll(k, 'drop')).taken, { timeout: 20_000, interval: 200 }).toBe(1);
    expect(ran('drop', 'large.csv').map((h) => h.raw)).toEqual([`(${20 * 1024 * 1024} bytes)`]);
    expect(readdirSync(join(folder.drop.local, 'done'))).toEqual(['large.csv']);
    const report = k.kernel.api.connections().find((c) => c.kind === 'file' && c.name === 'drop')!;
    expect(report.state).toBe('up');
    // The cut hit the read (the file was claimed, then released), not the listing.
    expect(report.meter.counts.get('pickup error')).toBe(1);
  });
});
