import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IssuesError, type SvcError } from '../../../kernel/errors.ts';
import { startKernel, TENANTS_RUN_HERE, type TestKernel } from '../../helpers/kernel.ts';

/**
 * The test gate of services.upload (`test: true`): the version's own tests run against it in a
 * process of their own before anything is deployed or written; failing tests refuse it whole.
 */
const calc = (expr: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ sum: ${expr} }) });\n`;
const CALC_TEST = `import { expect, test, testService } from 'svc/sdk/testing';
const calc = testService('calc');
test('adds its two numbers', async () => { expect((await calc.post({ a: 2, b: 3 })).body).toEqual({ sum: 5 }); });
`;
const CONFIG = `
channel_rest:
  - { name: calc, url_path: /calc, service: calc, security: none }
`;

const gateCopies = () => readdirSync(tmpdir()).filter((f) => f.startsWith('svc-test-gate-'));

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: { 'calc.ts': calc('ctx.input.a + ctx.input.b'), 'calc.test.ts': CALC_TEST, 'plain.ts': calc('1') } });
});
afterAll(() => k?.close());

const upload = (args: object) => k.kernel.runControl('services.upload', args) as Promise<Record<string, unknown>>;
const refusal = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => err as SvcError);
const sum = async () => JSON.parse((await k.app.inject({ method: 'POST', url: '/calc', payload: { a: 2, b: 3 } })).body) as { sum: number };
const versions = async () => ((await k.kernel.runControl('services.history', { name: 'calc' })) as { versions: unknown[] }).versions.length;

describe('services.upload with the test gate', () => {
  it('refuses a version whose own tests fail: nothing deployed or written, what the tests printed in the issues', async () => {
    const before = await versions();
    const copiesBefore = gateCopies().length;
    const err = await refusal(upload({ file: 'calc.ts', source: calc('ctx.input.a - ctx.input.b'), test: true }));
    expect(err).toBeInstanceOf(IssuesError);
    expect(err).toMatchObject({ code: 'SERVICE_TESTS_FAILED', status: 422 });
    expect(err!.details).toMatch(/^not deployed: its tests failed \(1 failed.*\); the previous version keeps serving$/);
    const issue = (err as IssuesError).issues[0]!;
    expect(issue.path).toEqual(['test']);
    // The failing test and its expectation, with the services directory's paths (not the copy's).
    expect(issue.message).toMatch(/adds its two numbers/);
    expect(issue.message).toMatch(/-1/);
    expect(issue.message).toContain(k.servicesDir);
    expect(issue.message).not.toMatch(/svc-test-gate-/);
    // The version that passed keeps serving, its file untouched, no version recorded; the copy is gone.
    expect(await sum()).toEqual({ sum: 5 });
    expect(readFileSync(join(k.servicesDir, 'calc.ts'), 'utf8')).toBe(calc('ctx.input.a + ctx.input.b'));
    expect(await versions()).toBe(before);
    expect(gateCopies().length).toBe(copiesBefore);
  }, 60_000);

  it('names the test file with the source, for the editor to offer the gate', async () => {
    expect(await k.kernel.runControl('services.source', { name: 'calc' })).toMatchObject({ file: 'calc.ts', test_file: 'calc.test.ts' });
    expect(await k.kernel.runControl('services.source', { name: 'plain' })).toMatchObject({ file: 'plain.ts', test_file: null });
  });

  it('deploys a version whose tests pass, and says so', async () => {
    const before = await versions();
    const r = await upload({ file: 'calc.ts', source: calc('Number(ctx.input.a) + Number(ctx.input.b)'), test: true });
    expect(r).toMatchObject({ name: 'calc', serving: 'this version', tests: { passed: true } });
    expect((r.tests as { summary: string }).summary).toMatch(/^1 passed/);
    expect(readFileSync(join(k.servicesDir, 'calc.ts'), 'utf8')).toBe(calc('Number(ctx.input.a) + Number(ctx.input.b)'));
    expect(await versions()).toBe(before + 1);
    expect(await sum()).toEqual({ sum: 5 });
  }, 60_000);

  it('checks the compile before the tests, and refuses a gate for a service that has no tests', async () => {
    const broken = await refusal(upload({ file: 'calc.ts', source: 'export default service({ handle: () => ( });', test: true }));
    expect(broken).toMatchObject({ code: 'SERVICE_NOT_COMPILED', status: 422 });
    expect((broken as IssuesError).issues[0]).toMatchObject({ path: ['source'], position: { line: 1 } });

    const none = await refusal(upload({ file: 'plain.ts', source: calc('2'), test: true }));
    expect(none).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    expect(none!.details).toMatch(/has no test file \(plain\.test\.ts beside it\)/);
    // Asked for a gate that could not run, nothing was deployed.
    expect(readFileSync(join(k.servicesDir, 'plain.ts'), 'utf8')).toBe(calc('1'));
    // Without the gate, the same upload deploys.
    expect(await upload({ file: 'plain.ts', source: calc('2') })).toMatchObject({ name: 'plain', serving: 'this version' });
    expect(await sum()).toEqual({ sum: 5 });
  }, 60_000);
});

describe.runIf(TENANTS_RUN_HERE)("the test gate and a tenant's services", () => {
  it("is refused: a tenant's test file would run outside the sandbox", async () => {
    const root = mkdtempSync(join(tmpdir(), 'svc-gate-tenant-'));
    const dir = join(root, 'acme', 'services');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'calc.ts'), calc('1'));
    writeFileSync(join(dir, 'calc.test.ts'), CALC_TEST);
    const t = await startKernel({ config: `server: { sandbox: { workers: 1, tenant_workers: 1 } }\ntenants:\n  - { name: acme, services_dir: ${dir} }\n` });
    try {
      const err = await t.kernel.runControl('services.upload', { file: 'calc.ts', tenant: 'acme', source: calc('2'), test: true }).then(
        () => undefined,
        (e: unknown) => e as SvcError,
      );
      expect(err).toMatchObject({ code: 'FORBIDDEN', status: 403 });
      expect(readFileSync(join(dir, 'calc.ts'), 'utf8')).toBe(calc('1'));
    } finally {
      await t.close();
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);
});
