import { createHash } from 'node:crypto';
import { AddressSet, type ClientAddress } from './addresses.ts';
import { CalendarWindow, type ZoneTime } from './calendar.ts';
import type { LimitUnit, Policy, Rule, TimeRange } from './schema.ts';

/**
 * Rules compiled once per config, so that a request costs a few comparisons.
 *
 * Counter keys are derived from the rule's content, not its position, so that a reload
 * keeps the counters of every rule and range that still exists even when others are
 * inserted, removed or reordered:
 *   <owner>/<rule id>/<range id>/            shared counter
 *   <owner>/<rule id>/<range id>/<client>    per-client counter
 * owner = `security:<name>` or `channel:<name>` (URI-encoded); rule id = hash of the
 * normalised cidr_list and per_client; range id = `all-day` or `HH:MM-HH:MM`.
 * Rates, limits and disabled/disallowed flags are not part of the key: changing them keeps the counters.
 * The keys are the same under both policies (the redis policy prefixes them), so every node
 * sharing a Redis derives the same key from the same config.
 */

export type OwnerKind = 'security' | 'channel';

export interface CompiledRange {
  /** 0-based position in the rule's time_range. */
  readonly index: number;
  /** 0-based position of its rule in rate_limiting (for log lines). */
  readonly ruleIndex: number;
  readonly label: string;
  readonly key: string;
  readonly allDay: boolean;
  /** Minutes of the day, [from, to); from > to crosses midnight. */
  readonly fromMinute: number;
  readonly toMinute: number;
  readonly disabled: boolean;
  readonly disallowed: boolean;
  /** Has a rate or a cap: requests are counted. */
  readonly limited: boolean;
  /** 0 = no rate. */
  readonly rate: number;
  readonly burst: number;
  /** Infinity = no cap. */
  readonly limit: number;
  readonly window: CalendarWindow | undefined;
  /** X-RateLimit-Limit: the cap when there is one, else the burst. */
  readonly headerLimit: number;
  readonly perClient: boolean;
}

export interface CompiledRule {
  /** 0-based position in rate_limiting. */
  readonly index: number;
  readonly key: string;
  readonly matchesEveryone: boolean;
  readonly addresses: AddressSet;
  readonly specific: readonly CompiledRange[];
  readonly allDay: CompiledRange;
}

export interface RuleSet {
  readonly kind: OwnerKind;
  readonly name: string;
  readonly key: string;
  readonly rules: readonly CompiledRule[];
  /** Which counter store the set counts in. */
  readonly policy: Policy;
  /** Some enabled range is `disallowed`: the set can drop connections (the firewall has work to do). */
  readonly disallows: boolean;
}

/** Calendar windows shared by every range of one unit (all use the same zone). */
export class WindowPool {
  private readonly windows = new Map<LimitUnit, CalendarWindow>();
  constructor(readonly time: ZoneTime) {}

  get(unit: LimitUnit): CalendarWindow {
    let w = this.windows.get(unit);
    if (w === undefined) {
      w = new CalendarWindow(this.time, unit);
      this.windows.set(unit, w);
    }
    return w;
  }
}

export function ownerKey(kind: OwnerKind, name: string): string {
  return `${kind}:${encodeURIComponent(name)}/`;
}

function minutes(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

/** Appends `~2`, `~3`... to ids seen before, so identical rules or ranges keep apart counters. */
function distinct(seen: Map<string, number>, id: string): string {
  const n = (seen.get(id) ?? 0) + 1;
  seen.set(id, n);
  return n === 1 ? id : `${id}~${n}`;
}

function compileRange(range: TimeRange, index: number, ruleIndex: number, ruleKey: string, perClient: boolean, pool: WindowPool, ids: Map<string, number>): CompiledRange {
  const label = range.is_all_day ? 'all-day' : `${range.time_from}-${range.time_to}`;
  const rate = range.rate ?? 0;
  const limit = range.limit ?? Number.POSITIVE_INFINITY;
  return {
    index,
    ruleIndex,
    label,
    key: `${ruleKey}${distinct(ids, label)}/`,
    allDay: range.is_all_day,
    fromMinute: range.is_all_day ? 0 : minutes(range.time_from!),
    toMinute: range.is_all_day ? 0 : minutes(range.time_to!),
    disabled: range.disabled,
    disallowed: range.disallowed,
    limited: rate > 0 || limit !== Number.POSITIVE_INFINITY,
    rate,
    burst: range.burst ?? rate,
    limit,
    window: range.limit_unit === undefined ? undefined : pool.get(range.limit_unit),
    headerLimit: limit !== Number.POSITIVE_INFINITY ? limit : (range.burst ?? rate),
    perClient,
  };
}

export function compileRuleSet(kind: OwnerKind, name: string, rules: readonly Rule[], pool: WindowPool, policy: Policy = 'local'): RuleSet {
  const key = ownerKey(kind, name);
  const ruleIds = new Map<string, number>();
  const compiled = rules.map((rule, index): CompiledRule => {
    const addresses = AddressSet.parse(rule.cidr_list);
    const digest = createHash('sha256').update(`${addresses.canonical}|${rule.per_client}`).digest('base64url').slice(0, 12);
    const ruleKey = `${key}${distinct(ruleIds, digest)}/`;
    const rangeIds = new Map<string, number>();
    const ranges = rule.time_range.map((t, i) => compileRange(t, i, index, ruleKey, rule.per_client, pool, rangeIds));
    const allDay = ranges.find((r) => r.allDay);
    // validateConfig refuses rules without exactly one all-day range; this guards direct callers.
    if (allDay === undefined) throw new Error(`${kind} '${name}', rate_limiting rule ${index + 1}: no all-day time range`);
    return {
      index,
      key: ruleKey,
      matchesEveryone: addresses.isEmpty,
      addresses,
      specific: ranges.filter((r) => !r.allDay),
      allDay,
    };
  });
  const disallows = compiled.some((rule) => [...rule.specific, rule.allDay].some((r) => r.disallowed && !r.disabled));
  return { kind, name, key, rules: compiled, policy, disallows };
}

/** The first rule whose cidr_list matches the client; undefined = no limit. */
export function matchRule(set: RuleSet, client: ClientAddress): CompiledRule | undefined {
  const rules = set.rules;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i]!;
    if (rule.matchesEveryone || rule.addresses.has(client)) return rule;
  }
  return undefined;
}

function covers(range: CompiledRange, minute: number): boolean {
  return range.fromMinute < range.toMinute
    ? minute >= range.fromMinute && minute < range.toMinute
    : minute >= range.fromMinute || minute < range.toMinute;
}

/**
 * The range in force: the first enabled specific range covering the minute, else the all-day
 * range; undefined when that is disabled too (the rule then allows everything).
 */
export function rangeAt(rule: CompiledRule, minuteOfDay: number): CompiledRange | undefined {
  const specific = rule.specific;
  for (let i = 0; i < specific.length; i++) {
    const range = specific[i]!;
    if (!range.disabled && covers(range, minuteOfDay)) return range;
  }
  return rule.allDay.disabled ? undefined : rule.allDay;
}
