/**
 * The tenants suite's server: tenant `victim` (one small channel and service) and tenant
 * `attacker` (a service per attack, under the quotas and rate limits a platform team would give a
 * tenant it does not trust), as the main config file of an operator's svc names them.
 */

/** The victim's service: parses an order, sorts and sums its lines, answers a summary (an empty one to a GET: the readiness probe's). */
const VICTIM = `import { service } from 'svc/sdk';
interface Line { sku: string; qty: number; price: number }
export default service({
  handle(ctx) {
    const order = (ctx.payload ?? {}) as { id?: number; lines?: Line[] };
    const lines = [...(order.lines ?? [])].sort((a, b) => a.sku.localeCompare(b.sku));
    let total = 0;
    for (const l of lines) total += l.qty * l.price;
    return { id: order.id, lines: lines.length, total: Math.round(total * 100) / 100, first: lines[0]?.sku };
  },
});
`;

/** An order of 20 lines, ≈ 1 KB of JSON: what the victim's client posts. */
export const ORDER = JSON.stringify({ id: 4711, lines: Array.from({ length: 20 }, (_, i) => ({ sku: `SKU-${(i * 7919) % 1000}`, qty: 1 + (i % 5), price: 9.99 + i })) });

/** Services an attack spreads over, so it keeps more isolates (threads) busy than a machine has cores. */
export const COPIES = 4;

const serviceOf = (body: string, prelude = '') => `import { service${prelude} } from 'svc/sdk';\nexport default service(${body});\n`;
const copies = (kind: string) => Array.from({ length: COPIES }, (_, i) => `${kind}-${i + 1}`);

/** The attackers' services by name. None declares a time limit: each call gets the server's (sandbox.timeout_ms, 5 s). */
const ATTACK_SERVICES: Record<string, string> = {
  ...Object.fromEntries(copies('loop').map((n) => [n, serviceOf('{ handle() { for (;;) {} } }')])),
  // Allocates until the isolate's memory limit (the tenant's memory_mb) disposes it.
  ...Object.fromEntries(copies('bomb').map((n) => [n, serviceOf('{ handle() { const hoard: number[][] = []; for (;;) hoard.push(new Array(65536).fill(hoard.length)); } }')])),
  // A V8 fatal error ("invalid size") that no memory limit catches: the sandbox process dies (test/sandbox/corpus/crashes.ts).
  ...Object.fromEntries(copies('crash').map((n) => [n, serviceOf("{ handle() { return '1'.repeat(0xfffffff).split('').length; } }")])),
  flood: VICTIM,
  ingest: VICTIM,
  leaf: serviceOf("{ invokableBy: '*', handle: () => ({ ok: true }) }"),
  // Invokes in a loop, 8 at a time, until its time limit ends it.
  invoker: serviceOf("{ async handle() { for (;;) await invokeAll(Array.from({ length: 8 }, () => ({ service: 'leaf', input: {} }))); } }", ', invokeAll'),
  // Queues background work in a loop until its time limit ends it (or the queue refuses).
  spawner: serviceOf("{ async handle() { for (;;) await invokeAsync('leaf', {}); } }", ', invokeAsync'),
  // Outgoing calls in a loop, 32 at a time, until its time limit ends it.
  storm: serviceOf("{ async handle(ctx) { const sink = outgoing('sink'); for (;;) await Promise.all(Array.from({ length: 32 }, () => sink.get(ctx.cid).catch(() => undefined))); } }", ', outgoing'),
};

/** One attack: channels (each to the service of its name) its clients keep requests in flight on, each sent again as soon as it is answered. */
export interface Attack {
  /** The row's name. */
  title: string;
  /** Channel (and service) name and the requests kept in flight on it. */
  load: Array<[channel: string, inFlight: number]>;
  /** Services it needs besides its channels'. */
  helpers?: string[];
  /** POSTs the victim's order when set (GET otherwise). */
  post?: boolean;
}

export const ATTACKS = {
  loop: { title: `infinite loops (${COPIES} services × 8 calls)`, load: copies('loop').map((n) => [n, 8]) },
  bomb: { title: `memory bombs (${COPIES} services × 8 calls)`, load: copies('bomb').map((n) => [n, 8]) },
  crash: { title: `V8 fatal errors, crash loop (${COPIES} services × 4 calls)`, load: copies('crash').map((n) => [n, 4]) },
  flood: { title: 'flood of calls from outside (256 connections)', load: [['flood', 256]], post: true },
  invoke: { title: 'invoke flood (8 callers × invokeAll of 8) + invokeAsync flood (4 callers)', load: [['invoker', 8], ['spawner', 4]], helpers: ['leaf'] },
  queue: { title: 'queued-event flood (use_queue channel, 64 connections)', load: [['ingest', 64]], post: true },
  storm: { title: 'outgoing call storm (8 callers × 32 calls at once)', load: [['storm', 8]] },
} satisfies Record<string, Attack>;

export type AttackName = keyof typeof ATTACKS;
export const ATTACK_NAMES = Object.keys(ATTACKS) as AttackName[];

/**
 * The tenant that makes one attack alone (its quotas are its own: an attack measured after
 * another does not meet quotas the other used up), and the one that makes them all at once.
 */
export const attackerOf = (attack: AttackName) => `${attack}-attacker`;
export const ALL_ATTACKER = 'attacker';

/**
 * Each tenant's quotas: docs/tenants.md's onboarding example (a third of a core per minute, 50
 * calls at once, 128 MB per isolate), with 100 outgoing calls a second and 1,000 queued events.
 */
export const QUOTAS = { cpu_ms_per_minute: 20_000, concurrent_calls: 50, memory_mb: 128, outgoing_calls_per_minute: 6_000, queued_events: 1_000 };

/** A channel rate limit on each attacker channel, as a platform team that writes its tenants' config would set. */
const RATE_LIMIT = [{ cidr_list: [], time_range: [{ is_all_day: true, rate: 200, burst: 400 }] }];

/** An attacker tenant that makes these attacks: their channels, services and outgoing connection. */
function attackerTenant(name: string, attacks: AttackName[], processes: number, sinkUrl: string): { tenant: Record<string, unknown>; services: string[] } {
  const channels = attacks.flatMap((a) => ATTACKS[a].load.map(([c]) => c));
  const services = [...new Set([...channels, ...attacks.flatMap((a) => (ATTACKS[a] as Attack).helpers ?? [])])];
  const config: Record<string, unknown[]> = {
    channel_rest: [...new Set(channels)].map((c) => ({ name: c, url_path: `/${c}`, service: c, security: 'none', rate_limiting: RATE_LIMIT, ...(c === 'ingest' ? { use_queue: true } : {}) })),
  };
  if (services.includes('storm')) config.outgoing_rest = [{ name: 'sink', address: sinkUrl, allowed_services: ['storm'] }];
  return { tenant: { name, services_dir: `tenants/${name}`, processes, quotas: QUOTAS, config }, services };
}

/** The main config file (the platform team writes every tenant's config in it) and every service file, by its path from the services directory (startSvcCli). */
export function serverSetup(processes: number, sinkUrl: string): { config: Record<string, unknown>; files: Record<string, string> } {
  const attackers = [...ATTACK_NAMES.map((a) => attackerTenant(attackerOf(a), [a], processes, sinkUrl)), attackerTenant(ALL_ATTACKER, ATTACK_NAMES, processes, sinkUrl)];
  const victim = { name: 'victim', services_dir: 'tenants/victim', processes, quotas: QUOTAS, config: { channel_rest: [{ name: 'work', url_path: '/work', service: 'work', security: 'none' }] } };
  const files: Record<string, string> = { '../tenants/victim/work.ts': VICTIM };
  for (const { tenant, services } of attackers) for (const s of services) files[`../tenants/${tenant.name}/${s}.ts`] = ATTACK_SERVICES[s]!;
  // BENCH_TENANT_DEMOTE_CORES sets sandbox.tenant_demote_cores (0: every tenant's process at the lowest priority from the start).
  const demote = process.env.BENCH_TENANT_DEMOTE_CORES;
  const server = demote === undefined || demote === '' ? {} : { server: { sandbox: { tenant_demote_cores: Number(demote) } } };
  return { config: { ...server, tenants: [victim, ...attackers.map((a) => a.tenant)] }, files };
}
