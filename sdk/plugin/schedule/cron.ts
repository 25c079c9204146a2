import type { ZoneTime } from '../zone.ts';

/**
 * Cron expressions: 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds
 * first; `*`, numbers, `a-b`, `*\/n`, `a-b/n`, `a/n`, lists; JAN–DEC and SUN–SAT (7 is Sunday
 * too); the macros @yearly @annually @monthly @weekly @daily @midnight @hourly. As in Vixie cron,
 * when both day fields are restricted a day matching either one fires.
 *
 * Times are wall-clock times in the job's zone. Daylight-saving changes (docs/scheduling.md):
 * - a wall time the clock jumps over (02:30 on a spring-forward day) fires once, at the jump,
 *   unless the expression fires every hour (its ticks in the skipped hour simply do not exist);
 * - a wall time the clock shows twice (01:30 on a fall-back day) fires once, the first time,
 *   unless the expression fires every hour (then both times: an every-15-minutes job keeps its pace).
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
/** Longest each month can be (February in a leap year). */
const MONTH_MAX_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** Names are numbered from this (JAN is 1; SUN is 0). */
  namesFrom?: number;
}
const SECOND_FIELD: FieldSpec = { name: 'second', min: 0, max: 59 };
const FIELDS: FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, namesFrom: 1 },
  // 7 is Sunday too; folded onto 0 after parsing.
  { name: 'day of week', min: 0, max: 7, names: DAYS, namesFrom: 0 },
];

export class CronError extends Error {}

/** One field's allowed values as a bitmap (index = value), and whether it was `*`. */
interface Field {
  allowed: boolean[];
  any: boolean;
}

function parseValue(text: string, spec: FieldSpec): number {
  const upper = text.toUpperCase();
  const named = spec.names?.indexOf(upper) ?? -1;
  if (named >= 0) return named + spec.namesFrom!;
  if (!/^\d+$/.test(text)) throw new CronError(`${spec.name}: '${text}' is not a number${spec.names ? ` or a name (${spec.names[0]}…)` : ''}`);
  const n = Number(text);
  if (n < spec.min || n > spec.max) throw new CronError(`${spec.name}: ${n} is outside ${spec.min}–${spec.max}`);
  return n;
}

function parseField(text: string, spec: FieldSpec): Field {
  const allowed = new Array<boolean>(spec.max + 1).fill(false);
  let any = false;
  for (const part of text.split(',')) {
    const [range, stepText, extra] = part.split('/');
    if (extra !== undefined || range === undefined || range === '') throw new CronError(`${spec.name}: '${part}' is not a value, a range or a step`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1) throw new CronError(`${spec.name}: step '${stepText}' must be a whole number of at least 1`);
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (range === '*') {
      from = spec.min;
      to = spec.max;
      if (step === 1) any = true;
    } else if (range.includes('-')) {
      const [a, b, more] = range.split('-');
      if (more !== undefined || !a || !b) throw new CronError(`${spec.name}: '${range}' is not a range`);
      from = parseValue(a, spec);
      to = parseValue(b, spec);
      if (from > to) throw new CronError(`${spec.name}: range ${range} runs backwards`);
    } else {
      from = parseValue(range, spec);
      // `a/n` means from a to the end, every n.
      to = stepText === undefined ? from : spec.max;
    }
    for (let v = from; v <= to; v += step) allowed[v] = true;
  }
  return { allowed, any };
}

/** A parsed cron expression: next fire times in a zone, with the DST rules above. */
export class Cron {
  private readonly second: Field;
  private readonly minute: Field;
  private readonly hour: Field;
  private readonly dom: Field;
  private readonly month: Field;
  private readonly dow: Field;
  /** Fires in every hour of the day: ticks in a skipped hour are dropped, a repeated hour fires twice. */
  private readonly hourly: boolean;

  constructor(readonly expression: string) {
    const text = expression.trim();
    const expanded = MACROS[text.toLowerCase()] ?? text;
    if (text.startsWith('@') && !MACROS[text.toLowerCase()]) throw new CronError(`unknown macro ${text} (known: ${Object.keys(MACROS).join(' ')})`);
    const parts = expanded.split(/\s+/);
    if (parts.length !== 5 && parts.length !== 6) throw new CronError(`a cron expression has 5 fields (minute hour day month weekday) or 6 (seconds first); '${text}' has ${parts.length}`);
    const withSeconds = parts.length === 6;
    this.second = withSeconds ? parseField(parts[0]!, SECOND_FIELD) : parseField('0', SECOND_FIELD);
    const rest = withSeconds ? parts.slice(1) : parts;
    [this.minute, this.hour, this.dom, this.month, this.dow] = FIELDS.map((spec, i) => parseField(rest[i]!, spec)) as [Field, Field, Field, Field, Field];
    if (this.dow.allowed[7]) this.dow.allowed[0] = true;
    this.dow.allowed.length = 7;
    this.hourly = this.hour.allowed.every(Boolean);
    this.checkFires();
  }

  /** Refuses an expression no date satisfies (`0 0 30 2 *`): it would never fire, silently. */
  private checkFires(): void {
    // With a restricted weekday too, any weekday fires (either field matches), and every month has every weekday.
    if (!this.dow.any && !this.dom.any) return;
    if (!this.dom.any) {
      const fires = MONTH_MAX_DAYS.some((max, m) => this.month.allowed[m + 1] && this.dom.allowed.some((ok, d) => ok && d <= max));
      if (!fires) throw new CronError(`'${this.expression}' never fires: no month in it has that day`);
    }
  }

  private dayMatches(wall: Date): boolean {
    const dom = this.dom.allowed[wall.getUTCDate()]!;
    const dow = this.dow.allowed[wall.getUTCDay()]!;
    if (this.dom.any && this.dow.any) return true;
    if (this.dom.any) return dow;
    if (this.dow.any) return dom;
    return dom || dow;
  }

  /** The first wall time ≥ `local` (whole seconds, as if UTC) that the fields allow. */
  nextWall(local: number): number {
    let t = Math.ceil(local / SECOND) * SECOND;
    // Every day of 28 years (the calendar repeats) is more than enough for an expression that fires.
    for (let guard = 0; guard < 28 * 366 * 4; guard++) {
      const wall = new Date(t);
      if (!this.month.allowed[wall.getUTCMonth() + 1]) {
        t = Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth() + 1, 1);
        continue;
      }
      if (!this.dayMatches(wall)) {
        t = Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate() + 1);
        continue;
      }
      const h = this.nextIn(this.hour, wall.getUTCHours());
      if (h === undefined) {
        t = Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate() + 1);
        continue;
      }
      if (h !== wall.getUTCHours()) {
        t = Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate(), h);
        continue;
      }
      const m = this.nextIn(this.minute, wall.getUTCMinutes());
      if (m === undefined) {
        t = Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate(), h + 1);
        continue;
      }
      if (m !== wall.getUTCMinutes()) {
        t = Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate(), h, m);
        continue;
      }
      const s = this.nextIn(this.second, wall.getUTCSeconds());
      if (s === undefined) {
        t = Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate(), h, m + 1);
        continue;
      }
      return Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate(), h, m, s);
    }
    throw new CronError(`'${this.expression}' does not fire within 28 years`);
  }

  private nextIn(field: Field, from: number): number | undefined {
    for (let v = from; v < field.allowed.length; v++) if (field.allowed[v]) return v;
    return undefined;
  }

  /**
   * The first fire time strictly after the instant `after`, in `zone`. Within a stretch of one
   * offset, wall times follow instants in order; at an offset change the search restarts from the
   * change with the new offset.
   */
  next(after: number, zone: ZoneTime): number {
    let from = Math.floor(after / SECOND) * SECOND + SECOND;
    let offset = zone.offsetAt(from);
    // A repeated hour of a daily job skips up to an hour of seconds one by one; far more than needed.
    for (let guard = 0; guard < 10_000; guard++) {
      const wall = this.nextWall(from + offset);
      const at = wall - offset;
      const change = changeWithin(zone, from, at, offset);
      if (change === undefined) {
        // A wall time shown twice (clocks set back) fires once, the first time, unless the job runs every hour.
        if (!this.hourly) {
          const shown = zone.instantsAt(wall);
          if (shown.length === 2 && at === shown[1]) {
            from = at + SECOND;
            continue;
          }
        }
        return at;
      }
      const next = zone.offsetAt(change);
      // Clocks set forward over this wall time: it fires at the jump, unless the job runs every hour.
      if (next > offset && wall < change + next && !this.hourly) return change;
      from = change;
      offset = next;
    }
    throw new CronError(`'${this.expression}': no fire time found after ${new Date(after).toISOString()}`);
  }
}

/**
 * The first instant in (from, to] whose offset differs from `offset`, or undefined. Offsets are
 * read a day apart (zones change them months apart), then the change is found by bisection.
 */
function changeWithin(zone: ZoneTime, from: number, to: number, offset: number): number | undefined {
  for (let lo = from; lo < to; lo += DAY) {
    const hi = Math.min(lo + DAY, to);
    if (zone.offsetAt(hi) !== offset) return zone.changeAfter(lo, hi);
  }
  return undefined;
}
