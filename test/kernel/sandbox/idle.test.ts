import { residentMb } from '../../../kernel/sandbox/resident.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * Isolates a sandbox process does not use give their memory back: one built at deploy and not in
 * use is dropped at once, one in use is dropped after `idle_ms` without calls, and the next call
 * builds it again. Module state shows which isolate answered: it starts over in a new one.
 */
const counter = `import { service } from 'svc/sdk';
const token = Math.random();
let calls = 0;
export default service({ limits: { timeoutMs: 200 }, handle: () => ({ token, calls: ++calls }) });`;

const config = (idleMs: number) => `
server: { sandbox: { workers: 1, idle_ms: ${idleMs} } }
channel_rest:
  - { name: counter, url_path: /counter, service: counter, security: none }
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call(k: TestKernel): Promise<{ token: number; calls: number }> {
  const res = await fetch(`${k.url}/counter`);
  expect(res.status).toBe(200);
  return (await res.json()) as { token: number; calls: number };
}

describe('an idle isolate', () => {
  let k: TestKernel;
  beforeAll(async () => {
    k = await startKernel({ config: config(300), services: { 'counter.js': counter }, listen: true });
  }, 60_000);
  afterAll(() => k?.close());

  it('is kept while calls come more often than idle_ms', async () => {
    const first = await call(k);
    for (let i = 2; i <= 6; i++) {
      await sleep(100);
      expect(await call(k)).toEqual({ token: first.token, calls: first.calls + i - 1 });
    }
  });

  it('is dropped after idle_ms without calls (and past its last deadline), and the next call builds it again', async () => {
    const before = await call(k);
    // idle_ms 300, the call's 200 ms limit, and the 250 ms sweep.
    await sleep(900);
    const after = await call(k);
    expect(after.token).not.toBe(before.token);
    expect(after.calls).toBe(1);
    expect((await call(k)).calls).toBe(2);
  });

  it('calls that arrive together while it is rebuilt all wait for the one build', async () => {
    await call(k);
    await sleep(900);
    const answers = await Promise.all(Array.from({ length: 8 }, () => call(k)));
    expect(new Set(answers.map((a) => a.token)).size).toBe(1);
    expect(answers.map((a) => a.calls).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });
});

describe('idle_ms: 0', () => {
  let k: TestKernel;
  beforeAll(async () => {
    k = await startKernel({ config: config(0), services: { 'counter.js': counter }, listen: true });
  }, 60_000);
  afterAll(() => k?.close());

  it('keeps every isolate', async () => {
    const before = await call(k);
    await sleep(900);
    expect(await call(k)).toEqual({ token: before.token, calls: before.calls + 1 });
  });
});

describe('isolates built at deploy', () => {
  const many: Record<string, string> = {};
  for (let i = 0; i < 20; i++) many[`s${i}.js`] = `import { service } from 'svc/sdk';\nconst name = 's${i}';\nexport default service({ handle: () => name });`;
  const manyConfig = (idleMs: number) => `
server: { sandbox: { workers: 1, idle_ms: ${idleMs} } }
channel_rest:
${Object.keys(many)
  .map((f) => f.replace('.js', ''))
  .map((n) => `  - { name: ${n}, url_path: /${n}, service: ${n}, security: none }`)
  .join('\n')}
`;

  async function sandboxRss(idleMs: number): Promise<number> {
    const k = await startKernel({ config: manyConfig(idleMs), services: many, listen: true });
    try {
      const res = await fetch(`${k.url}/s7`);
      expect(await res.json()).toBe('s7');
      return residentMb(k.kernel.pool.pids()[0])!;
    } finally {
      await k.close();
    }
  }

  it('are dropped when the service is not in use: 20 services cost far less memory than with idle_ms 0', async () => {
    const kept = await sandboxRss(0);
    const dropped = await sandboxRss(30_000);
    // About 1.2 MB per isolate (bench/README.md, memory): 19 isolates fewer is well over 10 MB.
    expect(kept - dropped).toBeGreaterThan(10);
  }, 60_000);
});
