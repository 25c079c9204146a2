import { residentMb } from '../../../kernel/sandbox/resident.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * Isolates a sandbox process does not use give their memory back: one built at deploy and not in
 * use is dropped at once, one in use is dropped after `idle_ms` without calls, and the next call
 * builds it again. Module state shows which isolate answered: it starts over in a new one.
 */
/** The counter's time limit. */
const LIMIT_MS = 200;
const counter = `import { service } from 'svc/sdk';
const token = Math.random();
let calls = 0;
export default service({ limits: { timeoutMs: ${LIMIT_MS} }, handle: () => ({ token, calls: ++calls }) });`;

const config = (idleMs: number) => `
server: { sandbox: { workers: 1, idle_ms: ${idleMs} } }
channel_rest:
  - { name: counter, url_path: /counter, service: counter, security: none }
`;

/**
 * The sandbox process keeps its own time (no injectable clock there), so the waits here are set
 * against idle_ms with wide margins on both sides rather than fine-tuned to it.
 */
const IDLE_MS = 1000;
/** How often the sandbox process looks for idle isolates (IDLE_SWEEP_MS in kernel/sandbox/worker.ts). */
const IDLE_SWEEP_MS = 250;
/**
 * An isolate with no call this long is dropped for sure: idle_ms after its last call (whose
 * deadline, LIMIT_MS after it, passes well before), plus one sweep, twice over for a loaded
 * machine's timers.
 */
const SURELY_DROPPED_MS = 2 * (IDLE_MS + IDLE_SWEEP_MS);
/** Calls come this often while the isolate must be kept: a fifth of idle_ms. */
const CALL_EVERY_MS = IDLE_MS / 5;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call(k: TestKernel): Promise<{ token: number; calls: number }> {
  const res = await fetch(`${k.url}/counter`);
  expect(res.status).toBe(200);
  return (await res.json()) as { token: number; calls: number };
}

describe('an idle isolate', () => {
  let k: TestKernel;
  beforeAll(async () => {
    k = await startKernel({ config: config(IDLE_MS), services: { 'counter.js': counter }, listen: true });
  }, 60_000);
  afterAll(() => k?.close());

  it('is kept while calls come more often than idle_ms', async () => {
    const first = await call(k);
    const firstAt = Date.now();
    let lastAt = firstAt;
    // Past idle_ms in all, so that only the calls in between can have kept it.
    for (let n = 2; lastAt - firstAt <= IDLE_MS; n++) {
      await sleep(CALL_EVERY_MS);
      const at = Date.now();
      // The premise: no gap between calls as long as idle_ms (only a stalled machine breaks it).
      expect(at - lastAt, 'the gap between two calls reached idle_ms: the machine stalled this test').toBeLessThan(IDLE_MS);
      lastAt = at;
      expect(await call(k)).toEqual({ token: first.token, calls: first.calls + n - 1 });
    }
  });

  it('is dropped after idle_ms without calls (and past its last deadline), and the next call builds it again', async () => {
    const before = await call(k);
    await sleep(SURELY_DROPPED_MS);
    const after = await call(k);
    expect(after.token).not.toBe(before.token);
    expect(after.calls).toBe(1);
    expect((await call(k)).calls).toBe(2);
  });

  it('calls that arrive together while it is rebuilt all wait for the one build', async () => {
    await call(k);
    await sleep(SURELY_DROPPED_MS);
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
    // As long as it takes an isolate to be dropped for sure when idle_ms is set.
    await sleep(SURELY_DROPPED_MS);
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
