import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { StepWatch } from '../../../kernel/platform/step-watch.ts';

interface Req {
  name: string;
  stepUntil: number;
  watchIndex: number;
}
const req = (name: string): Req => ({ name, stepUntil: Infinity, watchIndex: -1 });
const tick = () => new Promise((r) => setTimeout(r, 30));

describe('StepWatch', () => {
  let watch: StepWatch<Req, string> | undefined;
  afterEach(() => watch?.close());

  it('expires the requests past their deadline with their own context, keeps the others, and forgets those unwatched', async () => {
    const clock = new ManualClock(1_000);
    const expired: string[] = [];
    watch = new StepWatch<Req, string>(100, (r, ctx) => (expired.push(`${r.name}:${ctx}`), true), 5, clock);
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(req) as [Req, Req, Req, Req];
    for (const r of [a, b, c, d]) {
      r.stepUntil = watch.deadline();
      watch.watch(r, `ctx-${r.name}`);
    }
    expect(watch.size).toBe(4);
    // Unwatching one in the middle moves the last into its place; the others keep their contexts.
    watch.unwatch(b);
    expect([b.watchIndex, watch.size]).toEqual([-1, 3]);
    watch.unwatch(b);
    expect(watch.size).toBe(3);
    c.stepUntil = Infinity; // a step that bounds itself (the service call)
    clock.advance(150);
    await tick();
    expect(expired.sort()).toEqual(['a:ctx-a', 'd:ctx-d']);
    expect([a.watchIndex, d.watchIndex, watch.size]).toEqual([-1, -1, 1]);
    watch.unwatch(c);
    expect(watch.size).toBe(0);
    // Places are reused: a request watched again is watched once.
    watch.watch(a, 'again');
    watch.watch(a, 'again, replaced');
    expect(watch.size).toBe(1);
    a.stepUntil = watch.deadline();
    clock.advance(150);
    await tick();
    expect(expired).toContain('a:again, replaced');
  });

  it('gives a request that is not to be cut yet the whole limit again', async () => {
    const clock = new ManualClock(0);
    let cut = false;
    watch = new StepWatch<Req, string>(100, () => cut, 5, clock);
    const r = req('slow');
    r.stepUntil = watch.deadline();
    watch.watch(r, 'x');
    clock.advance(150);
    await tick();
    expect(watch.size).toBe(1);
    expect(r.stepUntil).toBeGreaterThanOrEqual(clock.now() + 100 - 5);
    cut = true;
    clock.advance(150);
    await tick();
    expect(watch.size).toBe(0);
  });
});
