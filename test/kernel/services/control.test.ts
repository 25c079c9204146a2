import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sendControl } from '../../../kernel/control.ts';
import { MAX_SERVICE_SOURCE } from '../../../kernel/services/control.ts';
import { IssuesError } from '../../../kernel/errors.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

const version = (v: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ version: '${v}' }) });\n`;
const BROKEN = `import { service } from 'svc/sdk';\n\nexport default service({ handle: () => ({ oops: ) });\n`;
const LIMITED = `import { service } from 'svc/sdk';\nexport default service({ limits: { timeoutMs: 1500 }, invokableBy: ['hello'], GET: () => ({ limited: true }) });\n`;

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
  state: 'serving' | 'serving_previous' | 'not_deployed' | 'quarantined';
  error: string | null;
  error_position: { line: number; column: number } | null;
  quarantine: string | null;
  last_good_from: string | null;
  verbs: string[];
  limits: { timeout_ms: number; memory_mb: number } | null;
  invokable_by: string[];
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
      state: 'serving',
      error: null,
      error_position: null,
      quarantine: null,
      last_good_from: null,
      verbs: [],
      limits: { timeout_ms: 5000, memory_mb: 64 },
      invokable_by: [],
      channels: ['hello'],
    });
    expect(byName.get('limited')).toMatchObject({ deployed: true, verbs: ['GET'], limits: { timeout_ms: 1500, memory_mb: 64 }, invokable_by: ['hello'], channels: ['limited'] });
    const broken = byName.get('broken')!;
    expect(broken).toMatchObject({ file: 'broken.ts', deployed: false, state: 'not_deployed', error_position: { line: 3 }, limits: null, channels: [] });
    expect(broken.error).toMatch(/^broken\.ts:3:\d+: /);
  });

  it('returns the source of a service file as it is on disk', async () => {
    expect(await op('services.source', { name: 'hello' })).toEqual({ name: 'hello', file: 'hello.ts', source: version('one'), test_file: null });
    expect(await op('services.source', { name: 'broken' })).toEqual({ name: 'broken', file: 'broken.ts', source: BROKEN, test_file: null });
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

  it('refuses a version that does not compile whole: nothing is written, the previous version keeps serving, and the list still says so', async () => {
    const broken = `import { service } from 'svc/sdk';\n\n\nexport default service({ handle: () => { return ( } });\n`;
    const refused = await upload('hello.ts', broken).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(IssuesError);
    const err = refused as IssuesError;
    expect(err).toMatchObject({ code: 'SERVICE_NOT_COMPILED', status: 422 });
    expect(err.details).toMatch(/^not deployed: hello\.ts:4:\d+: .*; the previous version keeps serving$/);
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]!.path).toEqual(['source']);
    expect(err.issues[0]!.message).toMatch(/^hello\.ts:4:\d+: /);
    // Each issue says where, as services.check does: the editor marks that line without reading the message.
    const column = Number(/^hello\.ts:4:(\d+): /.exec(err.issues[0]!.message)![1]);
    expect(err.issues[0]).toMatchObject({ position: { line: 4, column } });
    // The good file stays on disk, and it is what serves.
    expect(readFileSync(join(k.servicesDir, 'hello.ts'), 'utf8')).toBe(version('two'));
    expect((await get('/hello')).body).toEqual({ version: 'two' });
    expect((await list()).find((s) => s.name === 'hello')).toMatchObject({ deployed: true, state: 'serving', error: null });
    expect(readdirSync(k.servicesDir).filter((f) => f.startsWith('.'))).toEqual([]);

    const fixed = await upload('hello.ts', version('three'));
    expect(fixed).toMatchObject({ deployed: true, state: 'serving', error: null, serving: 'this version' });
    expect((await get('/hello')).body).toEqual({ version: 'three' });
  });

  it('a module that throws while loading is refused too; a new service that fails leaves no file and serves nothing', async () => {
    await expect(upload('fresh.ts', `throw new Error('cannot start');\n`)).rejects.toThrow(/^not deployed: .*cannot start.*; nothing was deployed$/);
    expect(existsSync(join(k.servicesDir, 'fresh.ts'))).toBe(false);
    expect((await get('/fresh')).status).toBe(500);
    expect((await list()).map((s) => s.name)).not.toContain('fresh');
  });

  it('a new file deploys a new service the channel was waiting for; .js works too', async () => {
    expect(await upload('fresh.ts', version('fresh'))).toMatchObject({ deployed: true, state: 'serving', channels: ['fresh'], serving: 'this version' });
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

describe('a file saved with an error, then a restart', () => {
  const lastGood = (dir: string, file: string) => join(dir, 'data', 'services-last-good', file);
  // One directory across both starts: the helper removes only directories it made.
  let dir: string;
  beforeEach(() => void (dir = mkdtempSync(join(tmpdir(), 'svc-restart-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('serves the last good version after the restart, says so loudly, and the list shows it with the error', async () => {
    const first = await startKernel({ config: CONFIG, services: { 'hello.ts': version('good') }, dir });
    expect(readFileSync(lastGood(dir, 'hello.ts'), 'utf8')).toBe(version('good'));
    // Saved by hand while running: the last good version keeps serving, as before.
    await first.writeService('hello.ts', BROKEN);
    expect((await first.app.inject({ method: 'GET', url: '/hello' })).json()).toEqual({ version: 'good' });
    await first.close();

    const restartLogs: Array<Record<string, unknown>> = [];
    const again = await startKernel({ config: CONFIG, dir, logs: restartLogs });
    try {
      expect((await again.app.inject({ method: 'GET', url: '/hello' })).json()).toEqual({ version: 'good' });
      const described = ((await again.kernel.runControl('services.list', {})) as Described[]).find((s) => s.name === 'hello')!;
      expect(described).toMatchObject({ deployed: true, state: 'serving_previous', error_position: { line: 3 } });
      expect(described.last_good_from).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      const loud = restartLogs.find((l) => l.level === 50 && l.service === 'hello');
      expect(loud?.msg).toMatch(/^service hello\.ts failed to compile: hello\.ts:3:\d+: .*; serving its last good version from \d{4}-/);
      // The broken file is left as it is, for its author to fix; fixing it serves the fix.
      expect(readFileSync(join(again.servicesDir, 'hello.ts'), 'utf8')).toBe(BROKEN);
      await again.writeService('hello.ts', version('fixed'));
      expect((await again.app.inject({ method: 'GET', url: '/hello' })).json()).toEqual({ version: 'fixed' });
      expect((((await again.kernel.runControl('services.list', {})) as Described[]).find((s) => s.name === 'hello'))).toMatchObject({ state: 'serving', error: null, last_good_from: null });
      expect(readFileSync(lastGood(dir, 'hello.ts'), 'utf8')).toBe(version('fixed'));
    } finally {
      await again.close();
    }
  });

  it('without a last good copy the service is not deployed after the restart, and the list says why', async () => {
    const first = await startKernel({ config: CONFIG, services: { 'hello.ts': version('good') }, dir });
    await first.close();
    writeFileSync(join(dir, 'services', 'hello.ts'), BROKEN);
    // A copy from another installation, or removed by hand: nothing to fall back on.
    writeFileSync(lastGood(dir, 'hello.ts'), BROKEN);
    const again = await startKernel({ config: CONFIG, dir });
    try {
      const res = await again.app.inject({ method: 'GET', url: '/hello' });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ details: "Service 'hello' is not deployed" });
      const described = ((await again.kernel.runControl('services.list', {})) as Described[]).find((s) => s.name === 'hello')!;
      expect(described).toMatchObject({ deployed: false, state: 'not_deployed', last_good_from: null });
      expect(described.error).toMatch(/^hello\.ts:3:\d+: /);
    } finally {
      await again.close();
    }
  });

  it('deleting a service removes its last good copy: a file saved later under its name does not bring back old code', async () => {
    const k2 = await startKernel({ config: CONFIG, services: { 'hello.ts': version('old') } });
    try {
      expect(existsSync(lastGood(k2.dir, 'hello.ts'))).toBe(true);
      await k2.kernel.runControl('services.delete', { name: 'hello' });
      expect(existsSync(lastGood(k2.dir, 'hello.ts'))).toBe(false);
    } finally {
      await k2.close();
    }
  });

  it('a file deleted while the server was down loses its copy at the next start: a broken file saved later under its name serves nothing', async () => {
    const first = await startKernel({ config: CONFIG, services: { 'hello.ts': version('old') }, dir });
    await first.close();
    rmSync(join(dir, 'services', 'hello.ts'));
    const second = await startKernel({ config: CONFIG, dir });
    await second.close();
    expect(existsSync(lastGood(dir, 'hello.ts'))).toBe(false);
    writeFileSync(join(dir, 'services', 'hello.ts'), BROKEN);
    const third = await startKernel({ config: CONFIG, dir });
    try {
      expect((await third.app.inject({ method: 'GET', url: '/hello' })).statusCode).toBe(500);
    } finally {
      await third.close();
    }
  });
});
