import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { waitFor } from '../../helpers/wait.ts';
import type { VersionInfo } from '../../../kernel/services/history.ts';

/**
 * Deploy history (kernel/services/history.ts, docs/services.md "Deploy history"): every version
 * that deployed, by content hash, through the control ops the admin API and `svc service …` use,
 * on a real SQLite store, real isolates and real files.
 */
const version = (v: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ version: '${v}' }) });\n`;
const BROKEN = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ oops: ) });\n`;
const CONFIG = `
channel_rest:
  - { name: hello, url_path: /hello, service: hello, security: none }
`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: { 'hello.ts': version('one') } });
});
afterAll(() => k?.close());

const op = <T>(name: string, args: object, actor?: string) => {
  const entry = k.kernel.api.controlOps().find((o) => o.op === name)!;
  return entry.handler(entry.args.parse(args), undefined, actor) as Promise<T>;
};
const history = async () => (await op<{ versions: VersionInfo[] }>('services.history', { name: 'hello' })).versions;
const serving = async () => JSON.parse((await k.app.inject({ method: 'GET', url: '/hello' })).body).version as string;
const fileOf = () => readFileSync(join(k.servicesDir, 'hello.ts'), 'utf8');

describe('deploy history', () => {
  it('records each new version once, from its file, an upload (with who) or a rollback, newest first; a version that did not compile is not one', async () => {
    expect(await history()).toMatchObject([{ version: 1, origin: 'file', actor: null, file: 'hello.ts' }]);

    // Saved by hand: a new version. Saved again unchanged (or deployed again at a restart): none.
    writeFileSync(join(k.servicesDir, 'hello.ts'), version('two'));
    await waitFor('version two serving', async () => (await serving()) === 'two', 10_000);
    writeFileSync(join(k.servicesDir, 'hello.ts'), BROKEN);
    await waitFor('the broken save refused', () => k.kernel.services.errors.has('hello'), 10_000);
    expect(await serving()).toBe('two');
    await op('services.upload', { file: 'hello.ts', source: version('three') }, 'ada');

    const versions = await history();
    expect(versions.map((v) => [v.version, v.origin, v.actor])).toEqual([
      [3, 'upload', 'ada'],
      [2, 'file', null],
      [1, 'file', null],
    ]);
    expect(new Set(versions.map((v) => v.hash)).size).toBe(3);
    expect(versions[0]!.bytes).toBe(Buffer.byteLength(version('three')));
    expect(Date.parse(versions[0]!.deployed_at)).toBeGreaterThan(Date.parse(versions[2]!.deployed_at) - 1);
    // Each version's source, as it deployed.
    expect(await op('services.version', { name: 'hello', version: 2 })).toMatchObject({ name: 'hello', version: 2, source: version('two'), origin: 'file' });
  });

  it('rolls back to an earlier version in one step: it serves, its file holds it, and it is the newest version', async () => {
    const out = await op<{ rolled_back_to: number; version: number; state: string }>('services.rollback', { name: 'hello', version: 1 }, 'bob');
    expect(out).toMatchObject({ rolled_back_to: 1, version: 4, state: 'serving' });
    expect(await serving()).toBe('one');
    expect(fileOf()).toBe(version('one'));
    const [newest] = await history();
    expect(newest).toMatchObject({ version: 4, origin: 'rollback', actor: 'bob', hash: (await history()).at(-1)!.hash });
  });

  it('answers 404 for a version or service it does not have, and for a service of another tenant', async () => {
    await expect(op('services.version', { name: 'hello', version: 99 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(op('services.rollback', { name: 'hello', version: 99 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(op('services.history', { name: 'nobody' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const entry = k.kernel.api.controlOps().find((o) => o.op === 'services.history')!;
    await expect(entry.handler({ name: 'hello' }, { tenant: 'acme' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await serving()).toBe('one');
  });
});
