import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { isServiceFile } from '../../../kernel/services/registry.ts';

// Types and an interface before the throwing line: esbuild's output moves it up by several lines.
const THROWS = `import { service } from 'svc/sdk';

interface Order {
  id: string;
  lines: Array<{ sku: string; qty: number }>;
}

type Totals = Record<string, number>;

function total(order: Order): number {
  const missing = order.lines.find((l) => l.qty < 0)!;
  return (missing as unknown as { price: { amount: number } }).price.amount;
}

export default service({
  handle(): Totals {
    return { total: total({ id: '1', lines: [{ sku: 'a', qty: -1 }] }) };
  },
});
`;

const TOP_LEVEL_THROW = `import { service } from 'svc/sdk';

type Unused = { a: string };
interface AlsoUnused { b: number }

throw new Error('refusing to start');

export default service({ handle: () => 'never' });
`;

const logs: Array<Record<string, unknown>> = [];
let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: 'channel_rest:\n  - { name: t, url_path: /t, service: throws, security: none }\n', services: { 'throws.ts': THROWS }, logs });
});
afterAll(() => k?.close());

/** What the isolate runs is esbuild's output; what the author reads is the source file. */
describe('positions in service files', () => {
  it("logs an exception's service stack frames at the source's lines", async () => {
    const res = await k.app.inject({ method: 'GET', url: '/t' });
    expect(res.statusCode).toBe(500);
    const line = logs.find((l) => l.msg === 'service raised an exception')!;
    expect(line.error).toMatch(/^TypeError: Cannot read properties of undefined/);
    const stack = String(line.stack);
    expect(stack).toContain('at total (file:///services/throws.ts:12:');
    expect(stack).toContain('at Object.handle (file:///services/throws.ts:17:');
    expect(stack).not.toContain('svc:sdk');
  });

  it("reports a top-level throw at deploy with the source's line", async () => {
    await k.writeService('boot.ts', TOP_LEVEL_THROW);
    expect(k.kernel.services.errors.get('boot')).toMatch(/^boot\.ts:6:\d+: .*refusing to start/);
  });

  it('does not take test files for services', () => {
    expect(isServiceFile('orders.test.ts')).toBe(false);
    expect(isServiceFile('types.d.ts')).toBe(false);
    expect(isServiceFile('orders.ts')).toBe(true);
  });
});
