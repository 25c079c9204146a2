import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A project outside the repository (no package.json, no node_modules) with one failing test. */
function failingProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-cli-'));
  mkdirSync(join(dir, 'services'));
  writeFileSync(
    join(dir, 'services', 'totals.ts'),
    `import { service, t } from 'svc/sdk';

type Line = { sku: string; price?: { amount: number } };

export default service({
  input: { lines: t.array() },
  handle(ctx) {
    const lines = ctx.input.lines as Line[];
    return { total: lines.reduce((sum, l) => sum + l.price!.amount, 0) };
  },
});
`,
  );
  writeFileSync(
    join(dir, 'services', 'totals.test.ts'),
    `import { expect, test, testService } from 'svc/sdk/testing';

const totals = testService('totals');

test('adds the prices', async () => {
  expect((await totals.post({ lines: [{ sku: 'a', price: { amount: 2 } }] })).body).toEqual({ total: 2 });
});

test('a line without a price', async () => {
  const res = await totals.post({ lines: [{ sku: 'a', price: { amount: 2 } }, { sku: 'b' }] });
  expect(res.status).toBe(200);
});
`,
  );
  return dir;
}

/** `svc test` through the CLI, as a service author runs it. */
describe('svc test', () => {
  it("runs the repository's sample tests (services/*.test.ts): all pass, exit 0", () => {
    const r = runCli(['test'], ROOT);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('services/orders.test.ts\n');
    expect(r.stdout).toContain('✓ orders › POST creates an order: 201, its Location, the default quantity');
    expect(r.stdout).toContain('✓ reserve › reserves stock and announces the reservation');
    expect(r.stdout).toMatch(/\n\d+ passed \(2 files, [\d.]+ s\)\n$/);
    expect(r.stdout).not.toContain('✗');
  });

  it('runs only the files given', () => {
    const r = runCli(['test', 'services/reserve.test.ts'], ROOT);
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain('orders.test.ts');
    expect(r.stdout).toContain('4 passed (1 file,');
  });

  it("reports a failure with the test's line and the service's own frames; exit 1", () => {
    const r = runCli(['test'], failingProject());
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('✓ adds the prices');
    expect(r.stdout).toContain('✗ a line without a price');
    expect(r.stdout).toContain('      expected 500 to be 200\n      at services/totals.test.ts:11:');
    expect(r.stdout).toContain("the service raised TypeError: Cannot read properties of undefined (reading 'amount')");
    expect(r.stdout).toMatch(/at Object\.handle \(services\/totals\.ts:9:\d+\)/);
    expect(r.stdout).toContain('1 failed, 1 passed (1 file,');
  });

  it('exits 2 on a usage error: an unknown option, a missing file, no tests at all', () => {
    const empty = mkdtempSync(join(tmpdir(), 'svc-test-empty-'));
    const option = runCli(['test', '--watch'], empty);
    expect(option.status).toBe(2);
    expect(option.stderr).toContain('unknown option --watch');
    const missing = runCli(['test', 'nope.test.ts'], empty);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('no such file or directory: nope.test.ts');
    const none = runCli(['test'], empty);
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('no test files (*.test.ts) under services/');
  });
});
