import type { SvcError, TenantQuotaApi } from '../../../sdk/plugin/index.ts';

/**
 * Tenants' pub/sub quotas (docs/tenants.md, "Quotas"), as both strategies apply them to a
 * publish to a tenant's topic, in this order: `publishes_per_second`, counted by the kernel's
 * ledger across the cluster, first, before any work (a publish it admits counts even if a full
 * queue or the bytes quota then refuses it); then the queue depths and `pubsub_bytes`, the bytes
 * of message data the tenant's topics and queues hold. The engine stores a message's data once
 * however many queues hold it, so a message counts once, from its publish until its last copy is
 * delivered, expires or is deleted. Each strategy counts the bytes where its messages live.
 * A platform topic's publish never comes here.
 */
export class TenantPublishQuotas {
  constructor(private readonly quotas: TenantQuotaApi | undefined) {}

  /** Counts one publish of the tenant; the refusal (429 TENANT_QUOTA) when it is over publishes_per_second. */
  takePublish(tenant: string): SvcError | undefined {
    return this.quotas?.take(tenant, 'publishes_per_second', 1);
  }

  bytesLimit(tenant: string): number | undefined {
    return this.quotas?.limit(tenant, 'pubsub_bytes');
  }

  /** Undefined when `size` more bytes fit the tenant's quota, else the refusal (counted in the tenant's figures). */
  bytesRefusal(tenant: string, held: number, size: number, limit: number): SvcError | undefined {
    if (held + size <= limit || !this.quotas) return undefined;
    return this.quotas.refuse(tenant, 'pubsub_bytes', `the tenant's topics and queues hold ${held} bytes of message data, of ${limit}; this message has ${size}`);
  }
}

/** Bytes of message data each tenant's topics and queues hold in this process (the memory strategy). */
export class HeldBytes {
  private readonly held = new Map<string, number>();

  of(tenant: string): number {
    return this.held.get(tenant) ?? 0;
  }

  add(tenant: string, bytes: number): void {
    this.held.set(tenant, this.of(tenant) + bytes);
  }

  remove(tenant: string, bytes: number): void {
    const left = this.of(tenant) - bytes;
    if (left > 0) this.held.set(tenant, left);
    else this.held.delete(tenant);
  }
}
