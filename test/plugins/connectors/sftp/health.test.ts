import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVERS_DIR, sftpFolder, testServers } from '../../../helpers/servers.ts';
import { parseExposition, sampleValue, startObserved, type ObservedKernel } from '../../observe/support.ts';
import { closedPort } from '../sql/support.ts';
import { CuttableProxy, entry, PROBE, type Outcome } from './support.ts';

/**
 * What the other suites leave out: a private key and its passphrase from named secrets,
 * ready_check probing in /ready (down while nothing listens, up once the server is there), and
 * operation_timeout_ms against a server that stops answering (through a proxy the test stalls).
 */
const PASSPHRASE = 'correct horse battery staple';
const ADMIN = { authorization: `Basic ${Buffer.from('admin:admin-test-password').toString('base64')}` };
let k: ObservedKernel;
let late: CuttableProxy;
let stalling: CuttableProxy;
let stallingLong: CuttableProxy;
let latePort: number;
let folder: { remote: string; local: string };
const keyDir = mkdtempSync(join(tmpdir(), 'svc-sftp-key-'));

beforeAll(async () => {
  await testServers();
  folder = sftpFolder('health');
  // The client key the sshd already trusts, encrypted with a passphrase (same key pair).
  const encrypted = join(keyDir, 'key');
  copyFileSync(join(SERVERS_DIR, 'client_key'), encrypted);
  execFileSync('ssh-keygen', ['-q', '-p', '-P', '', '-N', PASSPHRASE, '-f', encrypted]);
  const key = readFileSync(encrypted, 'utf8');
  expect(key).not.toBe(readFileSync(join(SERVERS_DIR, 'client_key'), 'utf8'));
  latePort = await closedPort();
  late = new CuttableProxy();
  stalling = await new CuttableProxy().start();
  stallingLong = await new CuttableProxy().start();
  const viaSecrets = { password: undefined, private_key_secret: 'partner_key', passphrase_secret: 'partner_passphrase' };
  const config = `
secrets:
  - { name: partner_key, value: ${JSON.stringify(key)} }
  - { name: partner_passphrase, value: '${PASSPHRASE}' }
  - { name: wrong_passphrase, value: 'not it' }
sftp_connection:
${entry('vault', folder.remote, viaSecrets)}${entry('wrong_phrase', folder.remote, { ...viaSecrets, passphrase_secret: 'wrong_passphrase' })}${entry('checked', folder.remote, { ready_check: true })}${entry('late', folder.remote, { port: latePort, ready_check: true, connect_timeout_ms: 1000, reconnect: { min_ms: 50, max_ms: 100 } })}${entry('stalling', folder.remote, { port: stalling.port, pool_size: 1, operation_timeout_ms: 500 })}${entry('stalling_long', folder.remote, { port: stallingLong.port, pool_size: 1 })}
channel_rest:
  - { name: probe, url_path: /probe, service: probe, method: POST, data_format: json, security: none }
  - { name: short, url_path: /short, service: short, method: POST, data_format: json, security: none }
`;
  // PROBE with a time limit far below operation_timeout_ms (120 s).
  const short = PROBE.replace('export default service({', 'export default service({\n  limits: { timeoutMs: 700 },');
  expect(short).not.toBe(PROBE);
  k = await startObserved({ config, services: { 'probe.ts': PROBE, 'short.ts': short } });
});
afterAll(async () => {
  await k?.close();
  await late?.close();
  await stalling?.close();
  await stallingLong?.close();
  rmSync(keyDir, { recursive: true, force: true });
});

async function calls(...list: unknown[][]): Promise<Outcome[]> {
  const res = await fetch(`${k.url}/probe`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ calls: list }) });
  expect(res.status).toBe(200);
  return (await res.json()) as Outcome[];
}

type Ready = { status: number; connections: Array<Record<string, unknown>> };
async function ready(): Promise<Ready> {
  const res = await fetch(`${k.admin}/ready`);
  return { status: res.status, connections: ((await res.json()) as { connections: Array<Record<string, unknown>> }).connections };
}
const connection = (r: Ready, name: string) => r.connections.find((c) => c.kind === 'sftp' && c.name === name);

describe('credentials from the vault', () => {
  it('logs in with a private key and its passphrase from named secrets; a wrong passphrase is ServiceUnavailable, the secret not shown', async () => {
    const [put, got, refused] = await calls(['put', 'vault', 'v.txt', 'from the vault'], ['get', 'vault', 'v.txt'], ['list', 'wrong_phrase', '']);
    expect(put).toEqual({ value: null });
    expect(got).toEqual({ value: 'from the vault' });
    expect(readFileSync(join(folder.local, 'v.txt'), 'utf8')).toBe('from the vault');
    expect(refused!.error).toMatchObject({ kind: 'ServiceUnavailable', status: 503 });
    expect(refused!.error!.message).not.toContain('not it');
    expect(JSON.stringify(k.logs)).not.toContain('not it');
    expect(JSON.stringify(k.logs)).not.toContain(PASSPHRASE);
  });
});

describe('ready_check', () => {
  it('opens a session at start: /ready shows the connection up, and /metrics its idle session, with no call made', async () => {
    await expect.poll(async () => connection(await ready(), 'checked')?.state, { timeout: 10_000 }).toBe('up');
    expect(connection(await ready(), 'checked')).toMatchObject({ role: 'connection', ready_check: true });
    const samples = parseExposition(await (await fetch(`${k.admin}/metrics`, { headers: ADMIN })).text());
    expect(sampleValue(samples, 'svc_connector_pool_connections', { kind: 'sftp', connection: 'checked', state: 'idle' })).toBe(1);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'sftp', connection: 'checked', operation: 'connect', outcome: 'ok' })).toBe(1);
  });

  it('answers 503 while a ready_check server cannot be reached, and 200 once it can, probed again without any call', async () => {
    await expect.poll(async () => connection(await ready(), 'late')?.state, { timeout: 10_000 }).toBe('down');
    const down = await ready();
    expect(down.status).toBe(503);
    expect(connection(down, 'late')).toMatchObject({ reason: 'connection refused' });
    // Connections without ready_check never make /ready fail (wrong_phrase is down after the test above).
    await late.start(latePort);
    await expect.poll(async () => connection(await ready(), 'late')?.state, { timeout: 10_000 }).toBe('up');
    await expect.poll(async () => (await ready()).status, { timeout: 10_000 }).toBe(200);
    expect(late.connections).toBeGreaterThanOrEqual(1);
  });
});

describe('operation_timeout_ms', () => {
  it('fails an operation the server stops answering with ServiceUnavailable at the timeout, and the next call works on a new session', async () => {
    expect(await calls(['put', 'stalling', 's.txt', 'before'])).toEqual([{ value: null }]);
    const opened = stalling.connections;
    stalling.stall();
    const started = Date.now();
    const [timedOut] = await calls(['get', 'stalling', 's.txt']);
    const took = Date.now() - started;
    stalling.resume();
    expect(timedOut!.error).toMatchObject({ kind: 'ServiceUnavailable', message: expect.stringContaining('timed out') });
    expect(took).toBeGreaterThanOrEqual(450);
    expect(took).toBeLessThan(5_000);
    expect(await calls(['get', 'stalling', 's.txt'])).toEqual([{ value: 'before' }]);
    expect(stalling.connections).toBe(opened + 1);
  });

  it("ends an operation before the calling service's time limit, so the service catches ServiceUnavailable", async () => {
    expect(await calls(['put', 'stalling_long', 'l.txt', 'before'])).toEqual([{ value: null }]);
    stallingLong.stall();
    // Waiting out operation_timeout_ms (120 s) ended the call with SERVICE_TIMEOUT.
    const res = await fetch(`${k.url}/short`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ calls: [['get', 'stalling_long', 'l.txt']] }) });
    stallingLong.resume();
    expect(res.status).toBe(200);
    const [cut] = (await res.json()) as Outcome[];
    expect(cut!.error).toMatchObject({ kind: 'ServiceUnavailable', message: expect.stringMatching(/^SFTP connection 'stalling_long': get not done before the calling service's time limit \(\d+ ms left\)$/) });
    // The session it cut is closed, the connection not marked down, and the next call works.
    expect(connection(await ready(), 'stalling_long')?.state).toBe('up');
    expect(await calls(['get', 'stalling_long', 'l.txt'])).toEqual([{ value: 'before' }]);
  });
});
