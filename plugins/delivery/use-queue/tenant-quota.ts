import { tenantOf, type Clock, type TenantQuotaApi } from '../../../sdk/plugin/index.ts';

/** How long a tenant's count read from the store is used before it is read again. */
export const RECOUNT_MS = 1_000;

/**
 * The tenants' `queued_events` quota (docs/tenants.md): events of a tenant's services waiting in
 * the Use queue, pending or running, on every node. The count is read from the store at most once
 * a second per tenant, plus the events this node accepted since: a flood on one node is held at
 * once, one spread over several nodes within a second's accepts. Tenants without the quota, and
 * the platform's services, cost nothing.
 */
export class QueuedEventsQuota {
  private readonly counts = new Map<string, { stored: number; since: number; at: number; reading?: Promise<void> }>();

  constructor(
    private readonly quotas: TenantQuotaApi,
    private readonly countOf: (tenant: string) => Promise<number>,
    private readonly clock: Clock,
  ) {}

  /** Refuses (TENANT_QUOTA, 429) an event of `service` when its tenant's queued events reach the quota. */
  async admit(service: string): Promise<void> {
    const tenant = tenantOf(service);
    const limit = this.quotas.limit(tenant, 'queued_events');
    if (tenant === undefined || limit === undefined) return;
    let c = this.counts.get(tenant);
    const now = this.clock.now();
    // A wall clock set back would otherwise keep an old count (and its refusals) until it caught up.
    if (!c || now - c.at >= RECOUNT_MS || now < c.at) {
      if (!c) this.counts.set(tenant, (c = { stored: 0, since: 0, at: -Infinity }));
      c.reading ??= this.recount(tenant, c);
      await c.reading;
    }
    const queued = c.stored + c.since;
    if (queued >= limit) throw this.quotas.refuse(tenant, 'queued_events', `${queued} events of the tenant's services are waiting in the Use queue, of ${limit}`, 1);
    c.since++;
  }

  private async recount(tenant: string, c: { stored: number; since: number; at: number; reading?: Promise<void> }): Promise<void> {
    try {
      const at = this.clock.now();
      const before = c.since;
      const stored = await this.countOf(tenant);
      c.stored = stored;
      // Accepts made while the count ran may or may not be in it: counting them twice errs on the safe side, for a second.
      c.since -= before;
      c.at = at;
    } finally {
      c.reading = undefined;
    }
  }
}
