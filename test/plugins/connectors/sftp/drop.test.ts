import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { sftpFolder, testServers } from '../../../helpers/servers.ts';
import { CuttableProxy, entry, PROBE, type Outcome } from './support.ts';

/** A connection that drops mid-transfer, through a proxy the test cuts: nothing half-written, and the pool recovers. */
let k: TestKernel;
let proxy: CuttableProxy;
let folder: { remote: string; local: string };

beforeAll(async () => {
  await testServers();
  folder = sftpFolder('drop');
  proxy = await new CuttableProxy().start();
  const config = `
sftp_connection:
${entry('flaky', folder.remote, { port: proxy.port, pool_size: 1, reconnect: { min_ms: 10, max_ms: 20 } })}
channel_rest:
  - { name: probe, url_path: /probe, service: probe, method: POST, data_format: json, security: none }
`;
  k = await startKernel({ config, services: { 'probe.ts': PROBE } });
});
afterAll(async () => {
  await k?.close();
  await proxy?.close();
});

async function calls(...list: unknown[][]): Promise<Outcome[]> {
  const res = await k.app.inject({ method: 'POST', url: '/probe', payload: { calls: list } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** Lets the pool see the close of sessions the proxy cut (an idle session is dropped when its close arrives). */
const settle = () => new Promise((r) => setTimeout(r, 100));

const BIG = { $repeat: ['x', 8 * 1024 * 1024] };

describe('a connection dropped mid-transfer', () => {
  it('fails an atomic put with ServiceUnavailable, leaves the old file as it was and removes the temporary one', async () => {
    expect(await calls(['put', 'flaky', 'report.csv', 'old'])).toEqual([{ value: null }]);
    proxy.cut();
    proxy.cutAfter(1024 * 1024);
    const [out] = await calls(['put', 'flaky', 'report.csv', BIG]);
    expect(out!.error).toMatchObject({ kind: 'ServiceUnavailable', message: expect.stringContaining("SFTP connection 'flaky' failed during the operation") });
    proxy.cutAfter(undefined);
    expect(readFileSync(join(folder.local, 'report.csv'), 'utf8')).toBe('old');
    // The part is removed on a new session, in the background.
    await expect.poll(() => readdirSync(folder.local), { timeout: 10_000 }).toEqual(['report.csv']);
  });

  it('reconnects at the next call, and the server kept running', async () => {
    const connectionsBefore = proxy.connections;
    proxy.cut();
    await settle();
    const out = await calls(['put', 'flaky', 'after.txt', 'again'], ['get', 'flaky', 'after.txt']);
    expect(out).toEqual([{ value: null }, { value: 'again' }]);
    expect(proxy.connections).toBeGreaterThan(connectionsBefore);
    expect(existsSync(join(folder.local, 'after.txt'))).toBe(true);
    const health = await k.app.inject({ method: 'GET', url: '/health' });
    expect(health.statusCode).toBeLessThan(500);
  });

  it('fails a get with ServiceUnavailable and the next get succeeds', async () => {
    expect(await calls(['put', 'flaky', 'big.txt', { $repeat: ['y', 4 * 1024 * 1024] }])).toEqual([{ value: null }]);
    proxy.cut();
    await settle();
    // A get sends little; cut once the download is under way instead.
    const pending = calls(['get', 'flaky', 'big.txt']);
    setTimeout(() => proxy.cut(), 60);
    const [out] = await pending;
    if (out!.error) expect(out!.error).toMatchObject({ kind: 'ServiceUnavailable' });
    else expect(out!.value.length).toBe(4 * 1024 * 1024);
    await settle();
    const [again] = await calls(['get', 'flaky', 'big.txt']);
    expect(again!.value?.length, JSON.stringify(again)).toBe(4 * 1024 * 1024);
  });
});
