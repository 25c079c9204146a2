import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendControl } from '../../../kernel/control.ts';
import { MAX_SERVICE_SOURCE } from '../../../kernel/services/control.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

const version = (v: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ version: '${v}' }) });\n`;
const BROKEN = `import { service } from 'svc/sdk';\n\nexport default service({ handle: () => ({ oops: ) });\n`;
const LIMITED = `import { service } from 'svc/sdk';\nexport default service({ limits: { timeoutMs: 1500 }, GET: () => ({ limited: true }) });\n`;

const CONFIG = `
channel_rest:
  - { name: hello, url_path: /hello, service: hello, security: none }
  - { name: fresh, url_path: /fresh, service: fresh, security: none }
  - { name: limited, url_path: /limited, service: limited, security: none }
`;

interface Described {
  name: string;
  file: string | null;
  deployed: boolean;
  error: string | null;
  error_position: { line: number; column: number } | null;
  verbs: string[];
  limits: { timeout_ms: number; memory_mb: number } | null;
  channels: string[];
}
type Uploaded = Described & { serving: string };

let k: TestKernel;
const logs: Array<Record<string, unknown>> = [];
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: { 'hello.ts': version('one'), 'broken.ts': BROKEN, 'limited.ts': LIMITED }, logs, listen: true });
});
afterAll(() => k?.close());

const op = <T>(name: string, args: object) => k.kernel.runControl(name, args) as Promise<T>;
const upload = (file: string, source: string) => op<Uploaded>('services.upload', { file, source });
const list = () => op<Described[]>('services.list', {});
async function get(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await k.app.inject({ method: 'GET', url: path });
  return { status: res.statusCode, body: JSON.parse(res.body) as Record<string, unknown> };
}

describe('services.list and services.source', () => {
  it('lists deployed services with their limits and channels, and failed files with the compile error and its line', async () => {
    const byName = new Map((await list()).map((s) => [s.name, s]));
    expect([...byName.keys()]).toEqual(['broken', 'hello', 'limited']);
    expect(byName.get('hello')).toEqual({
      name: 'hello',
      file: 'hello.ts',
      deployed: true,
      error: null,
      error_position: null,
      verbs: [],
      limits: { timeout_ms: 5000, memory_mb: 64 },
      channels: ['hello'],
    });
    expect(byName.get('limited')).toMatchObject({ deployed: true, verbs: ['GET'], limits: { timeout_ms: 1500, memory_mb: 64 }, channels: ['limited'] });
    const broken = byName.get('broken')!;
    expect(broken).toMatchObject({ file: 'broken.ts', deployed: false, error_position: { line: 3 }, limits: null, channels: [] });
    expect(broken.error).toMatch(/^broken\.ts:3:\d+: /);
  });

  it('returns the source of a service file as it is on disk', async () => {
    expect(await op('services.source', { name: 'hello' })).toEqual({ name: 'hello', file: 'hello.ts', source: version('one') });
    expect(await op('services.source', { name: 'broken' })).toEqual({ name: 'broken', file: 'broken.ts', source: BROKEN });
    await expect(op('services.source', { name: 'nosuch' })).rejects.toThrow("no service file named 'nosuch'");
    await expect(op('services.source', { name: '../etc' })).rejects.toThrow(/invalid arguments for 'services.source': name/);
  });
});

describe('services.upload', () => {
  it('deploys a good version at once: the channel answers with the new code, and the watcher does not deploy it twice', async () => {
    expect((await get('/hello')).body).toEqual({ version: 'one' });
    const done = await upload('hello.ts', version('two'));
    expect(done).toMatchObject({ name: 'hello', file: 'hello.ts', deployed: true, error: null, serving: 'this version' });
    expect((await get('/hello')).body).toEqual({ version: 'two' });
    expect(await op('services.source', { name: 'hello' })).toMatchObject({ source: version('two') });

    const deploys = () => logs.filter((l) => l.msg === 'service deployed' && l.service === 'hello').length;
    const before = deploys();
    await new Promise((r) => setTimeout(r, 200));
    await k.kernel.services.settled();
    expect(deploys()).toBe(before);
    // No temporary file is left behind.
    expect(readdirSync(k.servicesDir).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('reports a compile error with its line, and the previous version keeps serving', async () => {
    const failed = await upload('hello.ts', `import { service } from 'svc/sdk';\n\n\nexport default service({ handle: () => { return ( } });\n`);
    expect(failed).toMatchObject({ name: 'hello', deployed: true, serving: 'previous version', error_position: { line: 4 } });
    expect(failed.error).toMatch(/^hello\.ts:4:\d+: /);
    expect((await get('/hello')).body).toEqual({ version: 'two' });
    expect((await list()).find((s) => s.name === 'hello')).toMatchObject({ deployed: true, error: failed.error });

    const fixed = await upload('hello.ts', version('three'));
    expect(fixed).toMatchObject({ deployed: true, error: null, serving: 'this version' });
    expect((await get('/hello')).body).toEqual({ version: 'three' });
  });

  it('a module that throws while loading is reported too, and a failed new service serves nothing', async () => {
    const thrown = await upload('fresh.ts', `throw new Error('cannot start');\n`);
    expect(thrown).toMatchObject({ name: 'fresh', deployed: false, serving: 'nothing' });
    expect(thrown.error).toContain('cannot start');
    expect((await get('/fresh')).status).toBe(500);
  });

  it('a new file deploys a new service the channel was waiting for; .js works too', async () => {
    expect(await upload('fresh.ts', version('fresh'))).toMatchObject({ deployed: true, channels: ['fresh'], serving: 'this version' });
    expect((await get('/fresh')).body).toEqual({ version: 'fresh' });
    const js = await upload('plain_js-1.js', `export default { handle: () => ({ js: true }) };\n`);
    expect(js).toMatchObject({ name: 'plain_js-1', file: 'plain_js-1.js', deployed: true });
  });

  it('refuses file names that are not a plain name.ts or name.js in services_dir', async () => {
    for (const file of ['../escape.ts', 'sub/dir.ts', '/abs.ts', '.hidden.ts', 'types.d.ts', 'script.py', 'noext', 'space .ts', 'x.ts\n', '', 'a'.repeat(101) + '.ts']) {
      await expect(upload(file, version('x')), file).rejects.toThrow(/invalid arguments for 'services.upload': file: a plain file name/);
    }
    expect(existsSync(join(k.dir, 'escape.ts'))).toBe(false);
    await expect(op('services.upload', { file: 'ok.ts' })).rejects.toThrow(/source/);
  });

  it('refuses a source over the size cap and a second file for the same service', async () => {
    await expect(upload('big.ts', 'x'.repeat(MAX_SERVICE_SOURCE + 1))).rejects.toThrow(/source: at most 512 KiB/);
    await expect(upload('hello.js', version('js'))).rejects.toThrow('service \'hello\' is already the file hello.ts');
    expect(existsSync(join(k.servicesDir, 'hello.js'))).toBe(false);
    expect((await get('/hello')).body).toEqual({ version: 'three' });
  });

  it('works over the control socket, as the CLI and the admin API call it', async () => {
    const reply = await sendControl(join(k.dir, 'data', 'control.sock'), 'services.upload', { file: 'hello.ts', source: version('socket') });
    expect(reply).toMatchObject({ ok: true, value: { deployed: true, serving: 'this version' } });
    expect((await get('/hello')).body).toEqual({ version: 'socket' });
    const refused = await sendControl(join(k.dir, 'data', 'control.sock'), 'services.upload', { file: '../x.ts', source: 'x' });
    expect(refused).toMatchObject({ ok: false });
    expect(refused!.error).toMatch(/file: a plain file name/);
  });
});

describe('services.delete', () => {
  it('removes the file and undeploys the service', async () => {
    expect(await op('services.delete', { name: 'fresh' })).toEqual({ name: 'fresh', file: 'fresh.ts', deleted: true, deployed: false });
    expect(existsSync(join(k.servicesDir, 'fresh.ts'))).toBe(false);
    expect((await get('/fresh')).status).toBe(500);
    expect((await list()).map((s) => s.name)).not.toContain('fresh');
    await expect(op('services.delete', { name: 'fresh' })).rejects.toThrow("no service file named 'fresh'");
  });

  it('deleting a file that never deployed clears its error', async () => {
    expect(await op('services.delete', { name: 'broken' })).toMatchObject({ deleted: true, deployed: false });
    expect((await list()).map((s) => s.name)).not.toContain('broken');
    expect(readFileSync(join(k.servicesDir, 'hello.ts'), 'utf8')).toBe(version('socket'));
  });
});
