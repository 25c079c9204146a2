/**
 * Durations as people write them in config: `30s`, `5m`, `1h30m`, `2d`, `250ms`, or a number of
 * milliseconds. Units: ms, s, m, h, d (a day is 24 h of elapsed time, not a calendar day).
 */

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;

/** Milliseconds, or a reason the text is not a duration. */
export function parseDuration(value: string | number): number | { error: string } {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value) : { error: `${value} is not a number of milliseconds` };
  const text = value.trim().replace(/\s+/g, '');
  if (/^\d+$/.test(text)) return Number(text);
  if (!text) return { error: 'an empty duration' };
  PART.lastIndex = 0;
  let total = 0;
  let read = 0;
  for (let m = PART.exec(text); m; m = PART.exec(text)) {
    total += Number(m[1]) * UNITS[m[2]!]!;
    read = PART.lastIndex;
  }
  if (read !== text.length) return { error: `'${value}' is not a duration: write it like 30s, 5m, 1h30m, 2d or 250ms` };
  return Math.round(total);
}

/** `90000` → `1m30s`: how a duration is shown back (CLI, Dashboard). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const [unit, size] of [['d', UNITS.d!], ['h', UNITS.h!], ['m', UNITS.m!], ['s', UNITS.s!], ['ms', 1]] as const) {
    if (rest >= size) {
      out += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return out;
}
