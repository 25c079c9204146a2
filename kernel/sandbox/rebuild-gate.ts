/**
 * Spaces the rebuilds of isolates that a memory limit disposed, per tenant, in one sandbox process.
 *
 * Why: a memory limit costs its tenant a failed call, but each time a service fills its isolate
 * the process writes up to `memory_mb` of fresh pages and frees them again. Rebuilt at once, four
 * services doing that made 60–70 such bombs a second: gigabytes a second of memory traffic that
 * no CPU priority holds back, and another tenant's p99 rose by half (bench/README.md, Tenants).
 * So the first rebuild after a limit is immediate (a service that met its limit once is not
 * slowed), and while a tenant's isolates keep meeting theirs, its rebuilds wait their turn: one
 * per `spacing`, doubling from `baseMs` with each limit met in the window, up to `maxMs`. Calls
 * wait for the rebuild as they do for any build; the turn is per tenant, so spreading the bombs
 * over more services does not buy more of them.
 */
export interface RebuildGateOptions {
  /** Limits met longer ago than this no longer count. */
  windowMs: number;
  /** The spacing after the second limit met in the window. */
  baseMs: number;
  /** The longest spacing. */
  maxMs: number;
}

export const REBUILD_GATE_DEFAULTS: RebuildGateOptions = { windowMs: 10_000, baseMs: 50, maxMs: 1_000 };

/** Limits remembered per tenant: enough to reach `maxMs` from `baseMs` (2^5 = 32 × 50 ms > 1 s). */
const MAX_HITS = 8;

interface TenantLimits {
  /** When its isolates met their memory limit, oldest first (at most MAX_HITS). */
  hits: number[];
  /** The earliest time its next rebuild after a limit may start. */
  nextAt: number;
}

export class RebuildGate {
  private readonly tenants = new Map<string, TenantLimits>();

  constructor(
    private readonly now: () => number,
    private readonly options: RebuildGateOptions = REBUILD_GATE_DEFAULTS,
  ) {}

  /** One of the tenant's isolates met its memory limit. */
  limitMet(tenant: string): void {
    const t = this.live(tenant);
    t.hits.push(this.now());
    if (t.hits.length > MAX_HITS) t.hits.shift();
  }

  /** How long the tenant's next rebuild after a limit waits (0: now); takes that turn. */
  turn(tenant: string): number {
    const t = this.live(tenant);
    const now = this.now();
    const hits = t.hits.length;
    if (hits <= 1) return 0;
    const spacing = Math.min(this.options.maxMs, this.options.baseMs * 2 ** (hits - 2));
    const at = Math.max(now, t.nextAt);
    t.nextAt = at + spacing;
    return at - now;
  }

  /** The tenant's state, the limits that left the window dropped (`sweep` forgets tenants with none). */
  private live(tenant: string): TenantLimits {
    let t = this.tenants.get(tenant);
    if (!t) {
      t = { hits: [], nextAt: 0 };
      this.tenants.set(tenant, t);
    }
    const since = this.now() - this.options.windowMs;
    while (t.hits.length && t.hits[0]! < since) t.hits.shift();
    return t;
  }

  /** Whether it holds a tenant's limits still: `sweep` has work until it holds none. */
  get remembers(): boolean {
    return this.tenants.size > 0;
  }

  /** Drops tenants with no limit in the window (called now and then, so the map stays small). */
  sweep(): void {
    const since = this.now() - this.options.windowMs;
    for (const [tenant, t] of this.tenants) if (!t.hits.some((at) => at >= since) && t.nextAt <= this.now()) this.tenants.delete(tenant);
  }
}

/**
 * The tenant a service belongs to, as the gate keys it: the platform's services share ''. Not the
 * SDK's `tenantOf`: its module brings zod into the worker's bundle.
 */
export function gateKeyOf(service: string): string {
  const slash = service.indexOf('/');
  return slash < 0 ? '' : service.slice(0, slash);
}
