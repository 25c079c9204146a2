import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startCli, type CliServer } from '../helpers/cli.ts';

const TSC = fileURLToPath(new URL('../../node_modules/.bin/tsc', import.meta.url));

function typecheck(dir: string): { status: number | null; out: string } {
  const r = spawnSync(TSC, ['-p', join(dir, 'tsconfig.json')], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, out: r.stdout + r.stderr };
}

let server: CliServer | undefined;
afterAll(async () => {
  await server?.stop();
});

/** `svc init DIR` makes a service directory outside the repository that type-checks and serves. */
describe('svc init', () => {
  const outside = mkdtempSync(join(tmpdir(), 'svc-init-'));
  const dir = join(outside, 'my services');

  it('writes a tsconfig, a sample service and a config, and keeps existing files', () => {
    const first = runCli(['init', dir], outside);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toContain('created');
    const tsconfig = JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8')) as { compilerOptions: { paths: Record<string, string[]> } };
    expect(tsconfig.compilerOptions.paths['svc/sdk']![0]).toMatch(/sdk\/index\.ts$/);
    expect(tsconfig.compilerOptions.paths['svc/sdk/testing']![0]).toMatch(/sdk\/testing\/index\.ts$/);
    writeFileSync(join(dir, 'svc.yaml'), readFileSync(join(dir, 'svc.yaml'), 'utf8').replace('port: 17010', 'port: 0'));
    const again = runCli(['init', dir], outside);
    expect(again.status).toBe(0);
    expect(again.stdout).toContain('kept');
    expect(readFileSync(join(dir, 'svc.yaml'), 'utf8')).toContain('port: 0');
    expect(runCli(['init'], outside).status).toBe(2);
  });

  it('gives the editor the SDK types: the sample checks, a type error in a service is reported', () => {
    const ok = typecheck(dir);
    expect(ok.out).toBe('');
    expect(ok.status).toBe(0);
    writeFileSync(join(dir, 'services', 'broken.ts'), `import { service, t } from 'svc/sdk';\nexport default service({ input: { n: t.integer() }, handle: (ctx) => ctx.input.n.toUpperCase() });\n`);
    const bad = typecheck(dir);
    expect(bad.status).not.toBe(0);
    expect(bad.out).toMatch(/broken\.ts.*toUpperCase/s);
  });

  it("runs the sample service's test there (no package.json, no node_modules): svc test", () => {
    const r = runCli(['test'], dir);
    expect(r.stdout).toContain('✓ greets by name, with the default greeting');
    expect(r.stdout).toContain('2 passed (1 file,');
    expect(r.status).toBe(0);
  });

  it('serves the sample service from that directory', async () => {
    writeFileSync(join(dir, 'services', 'broken.ts'), `import { service } from 'svc/sdk';\nexport default service({ handle: () => 'fixed' });\n`);
    server = await startCli(dir, { SVC_PORT: '0' }, { config: 'svc.yaml' });
    const res = await fetch(`${server.url}/hello/Ada?greeting=Hi`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ message: 'Hi, Ada' });
  });
});
