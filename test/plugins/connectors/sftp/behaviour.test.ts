import { existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintOf } from '../../../../plugins/connectors/sftp/host-key.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { SERVERS_DIR, sftpFolder, sftpKeys, testServers } from '../../../helpers/servers.ts';
import type { KernelApi } from '../../../../sdk/plugin/index.ts';
import { capturePlugin, entry, PROBE, type Outcome } from './support.ts';

/** Put, get, list, rename, delete through a service against the real sshd, with the paths checked on its disk. */

/** Lets whatever `partner` raises escape, so the channel answers it. */
const UNCAUGHT = `import { service, sftp } from 'svc/sdk';
export default service({ POST: async (ctx) => ctx.payload.op === 'get' ? { got: await sftp('partner').get(ctx.payload.path) } : sftp('partner').put(ctx.payload.path, 'x'.repeat(1001)) });
`;
let k: TestKernel;
let api!: KernelApi;
let folder: { remote: string; local: string };
let keyFolder: { remote: string; local: string };
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  await testServers();
  folder = sftpFolder('beh');
  keyFolder = sftpFolder('key');
  const keys = sftpKeys();
  const wrongKey = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';
  const fingerprint = fingerprintOf(Buffer.from(keys.hostKey.split(' ')[1]!, 'base64'));
  const config = `
sftp_connection:
${entry('partner', folder.remote, { max_file_bytes: 1000, pool_size: 2 })}${entry('by_key', keyFolder.remote, { password: undefined, private_key_file: join(SERVERS_DIR, 'client_key') })}${entry('by_print', folder.remote, { host_key: fingerprint })}${entry('wrong_key', folder.remote, { host_key: wrongKey })}${entry('theirs', folder.remote, { allowed_services: ['stranger'] })}
channel_rest:
  - { name: probe, url_path: /probe, service: probe, method: POST, data_format: json, security: none }
  - { name: uncaught, url_path: /uncaught, service: uncaught, method: POST, data_format: json, security: none }
`;
  k = await startKernel({ config, services: { 'probe.ts': PROBE, 'uncaught.ts': UNCAUGHT }, logs, extraPlugins: [capturePlugin((kernel) => (api = kernel))] });
});
afterAll(() => k?.close());

async function calls(...list: unknown[][]): Promise<Outcome[]> {
  const res = await k.app.inject({ method: 'POST', url: '/probe', payload: { calls: list } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('round trips', () => {
  it('put, get, list, stat, rename, delete with a password', async () => {
    const out = await calls(
      ['mkdir', 'partner', 'in/deep'],
      ['put', 'partner', 'in/a.txt', 'hello é'],
      ['put', 'partner', 'in/b.bin', { $u8: [0, 1, 255] }, { mode: 0o600 }],
      ['get', 'partner', 'in/a.txt'],
      ['get', 'partner', 'in/b.bin', { encoding: 'bytes' }],
      ['get', 'partner', 'in/b.bin', { encoding: 'base64' }],
      ['list', 'partner', 'in'],
      ['stat', 'partner', 'in/a.txt'],
      ['rename', 'partner', 'in/a.txt', 'in/deep/c.txt'],
      ['delete', 'partner', 'in/b.bin'],
      ['list', 'partner', 'in'],
    );
    expect(out.slice(0, 3)).toEqual([{ value: null }, { value: null }, { value: null }]);
    expect(out[3]).toEqual({ value: 'hello é' });
    expect(out[4]).toEqual({ value: { $u8: [0, 1, 255] } });
    expect(out[5]).toEqual({ value: 'AAH/' });
    expect(out[6]!.value.map((e: { name: string; type: string; size: number }) => [e.name, e.type, e.size])).toEqual([
      ['a.txt', 'file', 8],
      ['b.bin', 'file', 3],
      ['deep', 'dir', expect.any(Number)],
    ]);
    expect(out[7]!.value).toMatchObject({ name: 'a.txt', type: 'file', size: 8, modifiedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect(out[10]!.value.map((e: { name: string }) => e.name)).toEqual(['deep']);
    expect(readFileSync(join(folder.local, 'in/deep/c.txt'), 'utf8')).toBe('hello é');
    // No temporary file is left beside the target.
    expect(readdirSync(join(folder.local, 'in/deep'))).toEqual(['c.txt']);
  });

  it('works with key auth, and pins by the SHA256 fingerprint as by the whole key', async () => {
    const out = await calls(['put', 'by_key', 'k.txt', 'by key'], ['get', 'by_key', 'k.txt'], ['put', 'by_print', 'p.txt', 'print'], ['get', 'by_print', 'p.txt']);
    expect(out).toEqual([{ value: null }, { value: 'by key' }, { value: null }, { value: 'print' }]);
    expect(readFileSync(join(keyFolder.local, 'k.txt'), 'utf8')).toBe('by key');
  });

  it('overwrite false refuses an existing file, true replaces it; rename refuses an existing target unless told', async () => {
    const out = await calls(
      ['put', 'partner', 'o.txt', 'one'],
      ['put', 'partner', 'o.txt', 'two', { overwrite: false }],
      ['put', 'partner', 'o.txt', 'three', { atomic: false, overwrite: false }],
      ['put', 'partner', 'o.txt', 'four'],
      ['put', 'partner', 'p.txt', 'other'],
      ['rename', 'partner', 'p.txt', 'o.txt'],
      ['rename', 'partner', 'p.txt', 'o.txt', { overwrite: true }],
      ['get', 'partner', 'nothing.txt'],
    );
    expect(out[1]!.error).toMatchObject({ kind: 'Conflict', message: expect.stringContaining('exists') });
    expect(out[2]!.error).toMatchObject({ kind: 'Conflict' });
    expect(out[5]!.error).toMatchObject({ kind: 'Conflict' });
    expect(out[6]).toEqual({ value: null });
    expect(out[7]!.error).toMatchObject({ kind: 'NotFound', message: "no file 'nothing.txt'" });
    expect(readFileSync(join(folder.local, 'o.txt'), 'utf8')).toBe('other');
  });
});

describe('the pinned host key', () => {
  it('refuses a server with another key, naming both fingerprints, logged at error, before logging in', async () => {
    const [out] = await calls(['put', 'wrong_key', 'never.txt', 'x']);
    const presented = fingerprintOf(Buffer.from(sftpKeys().hostKey.split(' ')[1]!, 'base64'));
    expect(out!.error).toMatchObject({ kind: 'ServiceUnavailable', message: expect.stringContaining(`the server presented ${presented}, the pinned key is SHA256:`) });
    expect(existsSync(join(folder.local, 'never.txt'))).toBe(false);
    const line = logs.find((l) => l.connection === 'wrong_key' && l.level === 50);
    expect(line).toMatchObject({ presented, pinned: expect.stringMatching(/^SHA256:/) });
    expect(JSON.stringify(logs)).not.toContain('svc-test');
  });
});

describe('paths', () => {
  it("refuses '..', absolute paths, NUL and backslashes with BadRequest, writing nothing outside the root", async () => {
    const bad = ['../escape.txt', 'a/../../escape.txt', '/tmp/escape.txt', 'nul\0.txt', '..\\escape.txt', 'x/..'];
    const out = await calls(...bad.map((p) => ['put', 'partner', p, 'x']), ['get', 'partner', '../beh'], ['list', 'partner', '..'], ['rename', 'partner', 'o.txt', '../moved.txt'], ['delete', 'partner', '/etc/passwd']);
    for (const o of out) expect(o.error, JSON.stringify(o)).toMatchObject({ kind: 'BadRequest' });
    expect(out[0]!.error!.message).toContain("holds '..'");
    expect(out[2]!.error!.message).toContain('is absolute');
    const parent = dirname(folder.local);
    expect(existsSync(join(parent, 'escape.txt'))).toBe(false);
    expect(existsSync(join(parent, 'moved.txt'))).toBe(false);
    expect(existsSync('/tmp/escape.txt')).toBe(false);
    expect(existsSync(join(folder.local, 'o.txt'))).toBe(true);
  });

  it('does not follow a symlink inside the root that points outside: get and put refuse it, list shows it as a symlink', async () => {
    const outside = sftpFolder('outside');
    writeFileSync(join(outside.local, 'secret.txt'), 'outside');
    symlinkSync(join(outside.local, 'secret.txt'), join(folder.local, 'link.txt'));
    symlinkSync(outside.local, join(folder.local, 'linkdir'));
    const out = await calls(
      ['get', 'partner', 'link.txt'],
      ['put', 'partner', 'link.txt', 'overwritten', { atomic: false }],
      ['put', 'partner', 'link.txt', 'overwritten'],
      ['get', 'partner', 'linkdir/secret.txt'],
      ['put', 'partner', 'linkdir/new.txt', 'x'],
      ['list', 'partner', 'linkdir'],
      ['list', 'partner', ''],
    );
    for (const o of out.slice(0, 6)) expect(o.error, JSON.stringify(o)).toMatchObject({ kind: 'BadRequest', message: expect.stringContaining('symlink') });
    expect(out[6]!.value.filter((e: { type: string }) => e.type === 'symlink').map((e: { name: string }) => e.name)).toEqual(['link.txt', 'linkdir']);
    expect(readFileSync(join(outside.local, 'secret.txt'), 'utf8')).toBe('outside');
    expect(readdirSync(outside.local)).toEqual(['secret.txt']);
  });
});

describe('size caps', () => {
  it('refuses a put over max_file_bytes before sending, and a get by the size the server reports', async () => {
    writeFileSync(join(folder.local, 'big.bin'), Buffer.alloc(1001));
    writeFileSync(join(folder.local, 'edge.bin'), Buffer.alloc(1000, 7));
    const out = await calls(['put', 'partner', 'toobig.txt', 'x'.repeat(1001)], ['get', 'partner', 'big.bin'], ['get', 'partner', 'edge.bin', { encoding: 'base64' }]);
    expect(out[0]!.error).toMatchObject({ name: 'PayloadTooLarge', kind: 'PayloadTooLarge', status: 413, tooLarge: true, message: expect.stringContaining('over the limit of 1000') });
    expect(out[1]!.error).toMatchObject({ kind: 'PayloadTooLarge', status: 413, tooLarge: true, message: "'big.bin' is 1001 bytes, over the limit of 1000" });
    expect(Buffer.from(out[2]!.value, 'base64')).toEqual(Buffer.alloc(1000, 7));
    expect(existsSync(join(folder.local, 'toobig.txt'))).toBe(false);
  });

  it('answers 413 PAYLOAD_TOO_LARGE with the CID when the service does not catch it', async () => {
    writeFileSync(join(folder.local, 'big2.bin'), Buffer.alloc(1001));
    for (const op of ['get', 'put']) {
      const res = await k.app.inject({ method: 'POST', url: '/uncaught', payload: { op, path: op === 'get' ? 'big2.bin' : 'toobig2.txt' } });
      expect(res.statusCode, res.body).toBe(413);
      expect(res.json()).toEqual({ result: 'Error', cid: res.headers['x-svc-cid'], details: expect.stringContaining('over the limit of 1000') });
    }
    expect(existsSync(join(folder.local, 'toobig2.txt'))).toBe(false);
  });
});

describe('who may use it', () => {
  it('refuses services not in allowed_services, and an unknown connection is NotFound', async () => {
    const out = await calls(['list', 'theirs', ''], ['list', 'nobody', '']);
    expect(out[0]!.error).toMatchObject({ kind: 'Forbidden', message: "Service 'probe' may not use the SFTP connection 'theirs'" });
    expect(out[1]!.error).toMatchObject({ kind: 'NotFound', message: "No SFTP connection named 'nobody'" });
  });

  it('refuses bad arguments from the sandbox on the host', async () => {
    const out = await calls(['put', 'partner', 'x.txt', 'x', { mode: 0o70000 }], ['put', 'partner', 42, 'x']);
    expect(out[0]!.error!.message).toContain('invalid arguments for sftp.put');
    expect(out[1]!.error).toMatchObject({ name: 'TypeError' });
  });
});

describe('/ready and /metrics', () => {
  it('reports each connection, its state and its operations counted', () => {
    const reports = api.connections().filter((r) => r.kind === 'sftp');
    const partner = reports.find((r) => r.name === 'partner')!;
    expect(partner).toMatchObject({ role: 'connection', state: 'up', readyCheck: false, pool: { size: 2 } });
    expect(partner.meter.counts.get('put ok')).toBeGreaterThan(2);
    expect(partner.meter.counts.get('get ok')).toBeGreaterThan(2);
    expect(reports.find((r) => r.name === 'wrong_key')).toMatchObject({ state: 'down', reason: expect.stringContaining('host key mismatch') });
  });
});
