import { describe, expect, it } from 'vitest';
import { Deadline } from '../../../sdk/plugin/index.ts';

/**
 * sdk/plugin/deadline.ts: one attempt's signal, aborted by the caller or by the time, and let go
 * at end(). Real timers, short ones.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Deadline', () => {
  it('aborts with a TimeoutError once the time has passed', async () => {
    const d = new Deadline(new AbortController().signal, 20);
    expect(d.signal.aborted).toBe(false);
    await sleep(60);
    expect(d.signal.aborted).toBe(true);
    expect(d.timedOut).toBe(true);
    expect((d.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it("aborts with the caller's reason when the caller aborts first", () => {
    const caller = new AbortController();
    const d = new Deadline(caller.signal, 10_000);
    caller.abort(new Error('the request ended'));
    expect(d.signal.aborted).toBe(true);
    expect(d.timedOut).toBe(false);
    expect((d.signal.reason as Error).message).toBe('the request ended');
    d.end();
  });

  it('starts aborted when the caller already has', () => {
    const caller = new AbortController();
    caller.abort('gone');
    const d = new Deadline(caller.signal, 10_000);
    expect(d.signal.aborted).toBe(true);
    expect(d.signal.reason).toBe('gone');
    d.end();
  });

  it('once ended, neither the time nor the caller aborts it, and the caller keeps no listener', async () => {
    const caller = new AbortController();
    let listeners = 0;
    const add = caller.signal.addEventListener.bind(caller.signal);
    const remove = caller.signal.removeEventListener.bind(caller.signal);
    caller.signal.addEventListener = ((...a: Parameters<typeof add>) => (listeners++, add(...a))) as typeof add;
    caller.signal.removeEventListener = ((...a: Parameters<typeof remove>) => (listeners--, remove(...a))) as typeof remove;
    const d = new Deadline(caller.signal, 20);
    expect(listeners).toBe(1);
    d.end();
    expect(listeners).toBe(0);
    await sleep(60);
    caller.abort();
    expect(d.signal.aborted).toBe(false);
    expect(d.timedOut).toBe(false);
  });

  it('works without a caller signal', async () => {
    const d = new Deadline(undefined, 10);
    await sleep(40);
    expect(d.timedOut).toBe(true);
  });
});
