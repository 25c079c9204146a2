import { describe, expect, it } from 'vitest';
import { gateKeyOf, RebuildGate } from '../../../kernel/sandbox/rebuild-gate.ts';

/** The gate on a clock the test moves. */
function gate() {
  let now = 1_000_000;
  const g = new RebuildGate(() => now, { windowMs: 10_000, baseMs: 50, maxMs: 1_000 });
  return { g, advance: (ms: number) => (now += ms) };
}

describe('rebuild gate (isolates rebuilt after a memory limit, spaced per tenant)', () => {
  it('lets the first rebuilds go at once, then spaces them, doubling to the longest spacing', () => {
    const { g } = gate();
    g.limitMet('acme');
    expect(g.turn('acme')).toBe(0);
    g.limitMet('acme');
    // The second limit in the window: this rebuild goes now, the next waits 50 ms after it.
    expect(g.turn('acme')).toBe(0);
    g.limitMet('acme');
    expect(g.turn('acme')).toBe(50);
    g.limitMet('acme');
    expect(g.turn('acme')).toBe(150); // 50 + 100
    for (let i = 0; i < 10; i++) g.limitMet('acme');
    // Eight limits remembered: 50 × 2^6 = 3,200 ms, held to 1,000; turns queue one after another.
    expect(g.turn('acme')).toBe(350); // 50 + 100 + 200
    expect(g.turn('acme')).toBe(1_350);
    expect(g.turn('acme')).toBe(2_350);
  });

  it('keeps tenants apart, and the platform ("") apart from them', () => {
    const { g } = gate();
    for (let i = 0; i < 5; i++) g.limitMet('bomber');
    expect(g.turn('bomber')).toBe(0);
    expect(g.turn('bomber')).toBeGreaterThan(0);
    g.limitMet('victim');
    expect(g.turn('victim')).toBe(0);
    expect(g.turn('victim')).toBe(0);
    expect(g.turn('')).toBe(0);
    expect(gateKeyOf('bomber/hoard')).toBe('bomber');
    expect(gateKeyOf('hoard')).toBe('');
  });

  it('forgets limits older than the window: a tenant that stopped is rebuilt at once again', () => {
    const { g, advance } = gate();
    for (let i = 0; i < 8; i++) g.limitMet('acme');
    expect(g.turn('acme')).toBe(0);
    expect(g.turn('acme')).toBe(1_000);
    advance(5_000);
    g.limitMet('acme');
    // Nine limits in the window (eight remembered): still spaced, after the turns already given.
    expect(g.turn('acme')).toBe(0);
    advance(10_001);
    g.limitMet('acme');
    expect(g.turn('acme')).toBe(0);
    expect(g.turn('acme')).toBe(0);
    advance(10_001);
    g.sweep();
    g.limitMet('acme');
    expect(g.turn('acme')).toBe(0);
  });
});
