/**
 * Cost of one rate-limit decision, in ns (goal: well under 1 µs).
 * Run: node --import tsx bench/rate-limit-micro.ts   (prints markdown table rows)
 */
import { AddressCache } from '../plugins/rate-limit/addresses.ts';
import { ZoneTime } from '../plugins/rate-limit/calendar.ts';
import { Limiter, Verdict } from '../plugins/rate-limit/limiter.ts';
import { MemoryCounterStore } from '../plugins/rate-limit/policies/memory.ts';
import { newDecision, type DecisionRequest } from '../plugins/rate-limit/policies/types.ts';
import { compileRuleSet, WindowPool } from '../plugins/rate-limit/rules.ts';
import { rateLimitingSchema } from '../plugins/rate-limit/schema.ts';

const ITERATIONS = 2_000_000;
const T0 = Date.UTC(2026, 0, 1, 12);

/** ns per call of fn(i), after a warm-up; the best of three runs (least disturbed by GC and JIT). */
function measure(fn: (i: number) => unknown): number {
  for (let i = 0; i < 200_000; i++) fn(i);
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 3; run++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < ITERATIONS; i++) fn(i);
    best = Math.min(best, Number(process.hrtime.bigint() - start) / ITERATIONS);
  }
  return best;
}

const rows: Array<[string, number]> = [];

{
  const store = new MemoryCounterStore();
  const req: DecisionRequest = { rate: 1_000_000, burst: 1_000_000, limit: 1e12, windowStart: T0, windowEnd: T0 + 86_400_000, now: T0, evictable: false };
  const out = newDecision();
  rows.push(['store.decide, shared counter (rate + burst + daily cap)', measure((i) => {
    req.now = T0 + (i >>> 10);
    return store.decide('channel:orders/abc/all-day/', req, out);
  })]);
}

{
  const store = new MemoryCounterStore();
  const req: DecisionRequest = { rate: 1000, burst: 1000, limit: 1e12, windowStart: T0, windowEnd: T0 + 86_400_000, now: T0, evictable: true };
  const clients = Array.from({ length: 1000 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
  const out = newDecision();
  rows.push(['store.decide, per-client counter (1000 clients, key built per call)', measure((i) => {
    req.now = T0 + (i >>> 10);
    return store.decide('channel:orders/abc/all-day/' + clients[i % 1000], req, out);
  })]);
}

const rules = rateLimitingSchema.parse([
  { cidr_list: ['192.0.2.0/24', '2001:db8::/32'], time_range: [{ is_all_day: true, rate: 50 }, { time_from: '22:00', time_to: '06:00', disallowed: true }] },
  { cidr_list: ['198.51.100.0/24'], time_range: [{ is_all_day: true, limit: 10, limit_unit: 'minute' }, { time_from: '09:00', time_to: '17:00', rate: 5 }] },
  { cidr_list: [], time_range: [{ is_all_day: true, rate: 1_000_000, burst: 1_000_000, limit: 1e12, limit_unit: 'day' }, { time_from: '00:00', time_to: '06:00', rate: 10 }] },
])!;
const denyRules = rateLimitingSchema.parse([
  { cidr_list: ['203.0.113.0/24'], time_range: [{ is_all_day: true, disallowed: true }] },
  ...rules,
])!;

for (const zone of ['UTC', 'Europe/Berlin']) {
  const time = new ZoneTime(zone);
  const pool = new WindowPool(time);
  const limiter = new Limiter(new MemoryCounterStore(), time);
  const addresses = new AddressCache();
  const set = compileRuleSet('channel', 'orders', rules, pool);
  rows.push([`Limiter.check, 3 rules x 2 ranges, last rule counts (${zone})`, measure((i) => {
    return limiter.check(set, addresses.get('203.0.113.7'), T0 + (i >>> 10), new Verdict());
  })]);
}

{
  const time = new ZoneTime('UTC');
  const limiter = new Limiter(new MemoryCounterStore(), time);
  const addresses = new AddressCache();
  const set = compileRuleSet('channel', 'orders', denyRules, new WindowPool(time));
  rows.push(['Limiter.check, firewall drops the client (first rule)', measure((i) => {
    return limiter.check(set, addresses.get('203.0.113.7'), T0 + (i >>> 10), new Verdict());
  })]);
}

console.log('| rate-limit micro-benchmark | ns per decision |');
console.log('|---|---:|');
for (const [name, ns] of rows) console.log(`| ${name} | ${ns.toFixed(1)} |`);
