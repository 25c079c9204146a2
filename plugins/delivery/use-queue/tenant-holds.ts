import { tenantOf } from '../../../sdk/plugin/index.ts';

/**
 * Holds of the background queue, per tenant. That queue holds every tenant's invokeAsync events,
 * so a refusal by one tenant's quota cannot hold it whole, as a channel's queue is held (Lane.heldUntil):
 * it holds that tenant's events alone. Without it a tenant over its quota with a backlog of
 * background events cost one refused attempt (a store write to start it, one to put it back)
 * per event per wait: up to a thousand a second for the thousand events the default
 * `queued_events` allows, all on the kernel's event loop, which serves every other tenant.
 *
 * The scheduler notes each background event's tenant when it learns it (accepted, taken over,
 * attempted) and asks, as it takes an event, whether its tenant is held: a held event goes back
 * to wait for the hold's end without touching the store.
 */
export class TenantHolds {
  /** The tenant of each background event of a tenant's service (the platform's are not kept). */
  private readonly tenantOfEvent = new Map<number, string>();
  /** Until when (clock ms) each held tenant's events wait. */
  private readonly until = new Map<string, number>();

  /** `maxWaitMs`: a hold further off than this means the clock was set back, and ends. */
  constructor(private readonly maxWaitMs: number) {}

  /** The event's service, from which its tenant (none for the platform's). */
  note(id: number, service: string): void {
    const tenant = tenantOf(service);
    if (tenant !== undefined) this.tenantOfEvent.set(id, tenant);
  }

  /** The event is done (succeeded, dead-lettered, deleted): it is no longer kept. */
  forget(id: number): void {
    this.tenantOfEvent.delete(id);
  }

  /** The service's tenant waits until `due`; a later hold already set stands. */
  hold(service: string, due: number): void {
    const tenant = tenantOf(service);
    if (tenant === undefined) return;
    this.until.set(tenant, Math.max(this.until.get(tenant) ?? -Infinity, due));
  }

  /** Until when the service's tenant is held at `now` (what an operator's listing shows); undefined when it is not. */
  heldFor(service: string, now: number): number | undefined {
    const tenant = tenantOf(service);
    const until = tenant === undefined ? undefined : this.until.get(tenant);
    return until !== undefined && until > now && until - now <= this.maxWaitMs ? until : undefined;
  }

  /** When the event may start if its tenant is held at `now`; undefined when it may start now. */
  heldUntil(id: number, now: number): number | undefined {
    if (this.until.size === 0) return undefined;
    const tenant = this.tenantOfEvent.get(id);
    if (tenant === undefined) return undefined;
    const until = this.until.get(tenant);
    if (until === undefined) return undefined;
    if (until <= now || until - now > this.maxWaitMs) {
      this.until.delete(tenant);
      return undefined;
    }
    return until;
  }

  /** Events kept (tests: nothing is kept past its event). */
  get size(): number {
    return this.tenantOfEvent.size;
  }
}
