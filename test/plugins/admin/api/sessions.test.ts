import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { LoginThrottle, Sessions } from '../../../../plugins/admin/api/sessions.ts';

/**
 * Session lifetimes and the failed-login minute are durations: the wall clock (the kernel's,
 * injectable) and a monotonic clock both measure them, and either ending them is enough. A wall
 * clock set back must neither keep a session alive nor lock an address out for the whole jump.
 */
const MINUTE = 60_000;

function clocks() {
  const wall = new ManualClock();
  let elapsed = 5_000;
  return { wall, elapsed: () => elapsed, pass: (ms: number) => void (elapsed += ms) };
}

describe('admin sessions', () => {
  it('end after their time to live of time that passed, though the wall clock was set back', () => {
    const { wall, elapsed, pass } = clocks();
    const sessions = new Sessions(wall, () => 30 * MINUTE, elapsed);
    const { token } = sessions.create({ name: 'admin', role: 'platform', tenant: undefined });
    wall.set(wall.now() - 3_600_000);
    pass(30 * MINUTE - 1);
    expect(sessions.get(token)?.user).toBe('admin');
    pass(1);
    expect(sessions.get(token)).toBeUndefined();
  });

  it('end when the wall clock says so, though little time passed here (a machine resumed from suspend)', () => {
    const { wall, elapsed } = clocks();
    const sessions = new Sessions(wall, () => 30 * MINUTE, elapsed);
    const { token } = sessions.create({ name: 'admin', role: 'platform', tenant: undefined });
    wall.advance(30 * MINUTE);
    expect(sessions.get(token)).toBeUndefined();
  });
});

describe('the failed-login throttle', () => {
  it('lets the address try again after a minute of time that passed, though the wall clock was set back', () => {
    const { wall, elapsed, pass } = clocks();
    const throttle = new LoginThrottle(wall, () => 3, elapsed);
    for (let i = 0; i < 3; i++) throttle.failed('10.0.0.1');
    expect(throttle.retryAfter('10.0.0.1')).toBe(60);
    wall.set(wall.now() - 3_600_000);
    expect(throttle.retryAfter('10.0.0.1')).toBe(60);
    pass(MINUTE - 1_000);
    expect(throttle.retryAfter('10.0.0.1')).toBe(1);
    pass(1_000);
    expect(throttle.retryAfter('10.0.0.1')).toBe(0);
  });

  it('forgets failures a minute old on the wall clock', () => {
    const { wall, elapsed } = clocks();
    const throttle = new LoginThrottle(wall, () => 3, elapsed);
    for (let i = 0; i < 3; i++) throttle.failed('10.0.0.1');
    wall.advance(MINUTE);
    expect(throttle.retryAfter('10.0.0.1')).toBe(0);
  });
});
