import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { TenantLedger } from '../../../../kernel/tenants/ledger.ts';
import { QueuedEventsQuota, RECOUNT_MS } from '../../../../plugins/delivery/use-queue/tenant-quota.ts';
import { tenant } from '../../../kernel/sandbox/tenant-runner.ts';

/** queued_events counted from the store at most once a second, plus this node's accepts since; on a clock moved by hand. */
describe('the queued_events quota', () => {
  const setup = () => {
    const clock = new ManualClock(1_000_000);
    const ledger = new TenantLedger(clock);
    ledger.configure([tenant('acme', { quotas: { queued_events: 2 } })]);
    const stored = { n: 0, reads: 0 };
    const quota = new QueuedEventsQuota(ledger, async () => (stored.reads++, stored.n), clock);
    return { clock, stored, quota };
  };

  it('adds its own accepts to the stored count, and reads the store again a second later', async () => {
    const { clock, stored, quota } = setup();
    await quota.admit('acme/x');
    await quota.admit('acme/x');
    await expect(quota.admit('acme/x')).rejects.toMatchObject({ code: 'TENANT_QUOTA', status: 429 });
    expect(stored.reads).toBe(1);
    // The events were delivered: the store holds none, which the next read after a second sees.
    clock.advance(RECOUNT_MS);
    await quota.admit('acme/x');
    expect(stored.reads).toBe(2);
    // The platform's services are not counted.
    await quota.admit('orders');
    expect(stored.reads).toBe(2);
  });

  it('reads the store again when the wall clock was set back, instead of keeping an old count until it catches up', async () => {
    const { clock, stored, quota } = setup();
    stored.n = 2;
    await expect(quota.admit('acme/x')).rejects.toMatchObject({ code: 'TENANT_QUOTA' });
    stored.n = 0;
    clock.advance(-3_600_000);
    await quota.admit('acme/x');
    expect(stored.reads).toBe(2);
  });
});
