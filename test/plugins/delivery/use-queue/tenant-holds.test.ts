import { describe, expect, it } from 'vitest';
import { TenantHolds } from '../../../../plugins/delivery/use-queue/tenant-holds.ts';

/** plugins/delivery/use-queue/tenant-holds.ts: the background queue's holds, per tenant. */
describe('TenantHolds', () => {
  const T0 = 1_000_000;

  it("holds a tenant's events until the hold's end, and no other tenant's nor the platform's", () => {
    const holds = new TenantHolds(60_000);
    holds.note(1, 'acme/a');
    holds.note(2, 'acme/b');
    holds.note(3, 'globex/a');
    holds.note(4, 'platform-service');
    holds.hold('acme/a', T0 + 5_000);
    expect(holds.heldUntil(1, T0)).toBe(T0 + 5_000);
    expect(holds.heldUntil(2, T0)).toBe(T0 + 5_000);
    expect(holds.heldUntil(3, T0)).toBeUndefined();
    expect(holds.heldUntil(4, T0)).toBeUndefined();
    // An event whose tenant is not known yet (replayed from the dead-letter queue) is not held before its attempt says.
    expect(holds.heldUntil(5, T0)).toBeUndefined();
    // The platform's services have no tenant: a hold for one holds nothing.
    holds.hold('platform-service', T0 + 5_000);
    expect(holds.heldUntil(4, T0)).toBeUndefined();
    expect(holds.heldUntil(1, T0 + 5_000)).toBeUndefined();
  });

  it('keeps the later of two holds', () => {
    const holds = new TenantHolds(60_000);
    holds.note(1, 'acme/a');
    holds.hold('acme/a', T0 + 9_000);
    holds.hold('acme/b', T0 + 2_000);
    expect(holds.heldUntil(1, T0)).toBe(T0 + 9_000);
  });

  it('ends a hold further off than any wait: the wall clock was set back', () => {
    const holds = new TenantHolds(60_000);
    holds.note(1, 'acme/a');
    holds.hold('acme/a', T0 + 30_000);
    expect(holds.heldUntil(1, T0 - 3_600_000)).toBeUndefined();
    // Ended, not only skipped: with the clock back where it was, the hold is gone.
    expect(holds.heldUntil(1, T0)).toBeUndefined();
  });

  it('keeps nothing of an event once it is forgotten', () => {
    const holds = new TenantHolds(60_000);
    holds.note(1, 'acme/a');
    holds.note(2, 'platform-service');
    expect(holds.size).toBe(1);
    holds.forget(1);
    holds.forget(2);
    expect(holds.size).toBe(0);
  });
});
