import { describe, expect, it } from 'vitest';
import { schedulerTiming } from '../../../plugins/scheduler/timing.ts';

/** The `scheduler.timing` capability: poll schedules for other plugins, read as jobs' are. */
const timing = schedulerTiming(() => 'Europe/Berlin');
const at = (iso: string) => Date.parse(iso);

describe('scheduler.timing', () => {
  it('ticks an interval at whole multiples from the epoch', () => {
    const t = timing.parse({ every: '30s' });
    if ('error' in t) throw new Error(t.error);
    expect(t.next(at('2026-03-01T10:00:10Z'))).toBe(at('2026-03-01T10:00:30Z'));
    expect(t.next(at('2026-03-01T10:00:30Z'))).toBe(at('2026-03-01T10:01:00Z'));
  });

  it('reads a cron in the server zone, or the one given', () => {
    const berlin = timing.parse({ cron: '0 2 * * *' });
    const utc = timing.parse({ cron: '0 2 * * *', timezone: 'UTC' });
    if ('error' in berlin || 'error' in utc) throw new Error('not parsed');
    expect(berlin.next(at('2026-01-10T12:00:00Z'))).toBe(at('2026-01-11T01:00:00Z'));
    expect(utc.next(at('2026-01-10T12:00:00Z'))).toBe(at('2026-01-11T02:00:00Z'));
  });

  it('takes whichever falls first when given both', () => {
    const t = timing.parse({ every: '1h', cron: '30 * * * *', timezone: 'UTC' });
    if ('error' in t) throw new Error(t.error);
    expect(t.next(at('2026-01-10T12:10:00Z'))).toBe(at('2026-01-10T12:30:00Z'));
    expect(t.next(at('2026-01-10T12:30:00Z'))).toBe(at('2026-01-10T13:00:00Z'));
  });

  it('says why a spec is not valid', () => {
    expect(timing.parse({})).toEqual({ error: 'give every, cron or both' });
    expect(timing.parse({ every: 'soon' })).toMatchObject({ error: expect.stringContaining('every:') });
    expect(timing.parse({ cron: '* *' })).toMatchObject({ error: expect.stringContaining('cron: a cron expression has 5 fields') });
    expect(timing.parse({ every: '1m', timezone: 'Mars/Olympus' })).toMatchObject({ error: expect.stringContaining('timezone') });
  });
});
