import { describe, expect, it } from 'vitest';
import { jobSchema, type Job } from '../../../plugins/scheduler/schema.ts';
import { scheduleOf } from '../../../plugins/scheduler/schedule.ts';

/** Jobs as config gives them: the schema's refusals, and each kind's ticks. */

const job = (fields: Record<string, unknown>): Job => jobSchema.parse({ name: 'j', service: 's', ...fields });
const issues = (fields: Record<string, unknown>) => {
  const r = jobSchema.safeParse({ name: 'j', service: 's', ...fields });
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

describe('the schema', () => {
  it('wants exactly one of every, cron and at', () => {
    expect(issues({})).toEqual(['every: give one of every, cron or at']);
    expect(issues({ every: '5m', cron: '* * * * *' })).toEqual(['cron: give one of every, cron or at, not every and cron']);
  });

  it('names the field and the reason for a bad value', () => {
    expect(issues({ every: 'often' })).toEqual(["every: 'often' is not a duration: write it like 30s, 5m, 1h30m, 2d or 250ms"]);
    expect(issues({ cron: '0 0 30 2 *' })).toEqual(["cron: '0 0 30 2 *' never fires: no month in it has that day"]);
    expect(issues({ every: '1m', timezone: 'Mars/Olympus' })).toEqual(['timezone: not an IANA time zone name (e.g. Europe/Berlin)']);
    expect(issues({ at: 'tomorrow' })[0]).toMatch(/^at: an ISO 8601 date and time/);
    expect(issues({ every: '1m', overlap: 'sometimes' })[0]).toMatch(/^overlap: /);
  });
});

describe('ticks', () => {
  it('an interval ticks at whole multiples from the epoch, or from its start', () => {
    const s = scheduleOf(job({ every: '5m' }), 'UTC');
    expect(iso(s.next(Date.parse('2026-05-04T10:07:13Z')))).toBe('2026-05-04T10:10:00.000Z');
    expect(iso(s.next(Date.parse('2026-05-04T10:10:00Z')))).toBe('2026-05-04T10:15:00.000Z');
    const from = scheduleOf(job({ every: '5m', start: '2026-05-04T10:01:30Z' }), 'UTC');
    expect(iso(from.next(Date.parse('2026-05-04T09:00:00Z')))).toBe('2026-05-04T10:01:30.000Z');
    expect(iso(from.next(Date.parse('2026-05-04T10:07:13Z')))).toBe('2026-05-04T10:11:30.000Z');
  });

  it('an interval keeps elapsed time through a daylight-saving change', () => {
    const s = scheduleOf(job({ every: '1h', timezone: 'America/New_York' }), 'UTC');
    expect(iso(s.next(Date.parse('2026-03-08T06:30:00Z')))).toBe('2026-03-08T07:00:00.000Z');
    expect(iso(s.next(Date.parse('2026-03-08T07:00:00Z')))).toBe('2026-03-08T08:00:00.000Z');
  });

  it('start and end bound the ticks; wall times without an offset are in the job\'s zone', () => {
    const s = scheduleOf(job({ cron: '0 9 * * *', timezone: 'Europe/Berlin', start: '2026-06-10', end: '2026-06-12T09:00' }), 'UTC');
    expect(iso(s.next(Date.parse('2026-06-01T00:00:00Z')))).toBe('2026-06-10T07:00:00.000Z');
    expect(iso(s.next(Date.parse('2026-06-10T07:00:00Z')))).toBe('2026-06-11T07:00:00.000Z');
    expect(iso(s.next(Date.parse('2026-06-11T07:00:00Z')))).toBe('2026-06-12T07:00:00.000Z');
    expect(s.next(Date.parse('2026-06-12T07:00:00Z'))).toBeUndefined();
  });

  it('a one-time job ticks once; the server zone applies when the job names none', () => {
    const s = scheduleOf(job({ at: '2026-12-24T18:00:00' }), 'Europe/Paris');
    expect(iso(s.next(Date.parse('2026-12-01T00:00:00Z')))).toBe('2026-12-24T17:00:00.000Z');
    expect(s.next(Date.parse('2026-12-24T17:00:00Z'))).toBeUndefined();
    expect(iso(scheduleOf(job({ at: '2026-12-24T18:00:00+01:00' }), 'UTC').next(0))).toBe('2026-12-24T17:00:00.000Z');
  });

  it('jitter is the same for a tick on every node, within the bound, and differs between ticks', () => {
    const a = scheduleOf(job({ every: '1m', jitter: '30s' }), 'UTC');
    const b = scheduleOf(job({ every: '1m', jitter: '30s' }), 'UTC');
    const delays = Array.from({ length: 50 }, (_, i) => a.jitterMs(i * 60_000));
    expect(delays).toEqual(Array.from({ length: 50 }, (_, i) => b.jitterMs(i * 60_000)));
    for (const d of delays) expect(d).toBeGreaterThanOrEqual(0), expect(d).toBeLessThan(30_000);
    expect(new Set(delays).size).toBeGreaterThan(45);
  });
});
