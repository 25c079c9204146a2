import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../../../sdk/plugin/index.ts';

/** Durations as config writes them (scheduler jobs, file pickup polls). */
describe('durations', () => {
  it.each([
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['2d', 172_800_000],
    ['250ms', 250],
    ['1.5s', 1_500],
    [1500, 1_500],
    ['1500', 1_500],
  ])('%s is %i ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '5 minutes', '1x', 's', '-5s', '1h 30'])('refuses %j', (text) => expect(parseDuration(text)).toHaveProperty('error'));

  it('shows a duration back', () => {
    expect(formatDuration(5_400_000)).toBe('1h30m');
    expect(formatDuration(90_250)).toBe('1m30s250ms');
  });
});
