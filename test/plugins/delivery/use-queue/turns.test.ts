import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { listEvents } from '../../../../plugins/delivery/use-queue/control.ts';
import { Scheduler } from '../../../../plugins/delivery/use-queue/scheduler.ts';
import { DEFAULT_DELIVERY } from '../../../../plugins/delivery/use-queue/schema.ts';
import { QueueTable } from '../../../../plugins/delivery/use-queue/store.ts';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { SqliteStore } from '../../../../kernel/store/sqlite.ts';
import type { Clock, EventOutcome, InvokeRequest, SvcConfig } from '../../../../sdk/plugin/index.ts';

/**
 * plugins/delivery/use-queue/scheduler.ts: attempts that end at once (a tenant's quota refuses
 * them, the service is gone) end in microtasks. Each next attempt starts in a turn of the event
 * loop of its own, so a backlog of them never holds the loop, and the requests waiting on it,
 * for the whole backlog. A real SQLite file; the run is the kernel's event path stood in by an
 * answer at once, which is what such attempts get.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const EVENTS = 120;

/** A scheduler over a real SQLite file in a temp dir, its run stood in by `run`. */
async function schedulerOn(run: (req: InvokeRequest) => Promise<EventOutcome>, clock: Clock = { now: () => Date.now() }): Promise<{ scheduler: Scheduler; store: SqliteStore; table: QueueTable }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-queue-turns-'));
  dirs.push(dir);
  const store = new SqliteStore(join(dir, 'svc.db'));
  const table = await QueueTable.open(store);
  let n = 0;
  const scheduler = new Scheduler({
    table,
    run,
    newCid: () => `cid${n++}`,
    clock,
    log: pino({ level: 'silent' }),
    maxRunning: 1,
    background: DEFAULT_DELIVERY,
    stopWaitMs: 1_000,
    random: () => 0.5,
    node: 'n1',
    liveNodes: async () => new Set(['n1']),
  });
  await scheduler.load();
  return { scheduler, store, table };
}

describe('a backlog of attempts that end at once', () => {
  it('runs one attempt per turn of the event loop, not the whole backlog in one', async () => {
    // Turns of the event loop: a check-phase callback that schedules itself counts one per turn.
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns++;
      if (ticking) setImmediate(tick);
    };
    const seenAt: number[] = [];
    const refused: EventOutcome = { ok: false, kind: 'DEPLOY_FAILED', message: 'not deployed', permanent: true };
    const { scheduler, store } = await schedulerOn(async () => {
      seenAt.push(turns);
      return refused;
    });
    try {
      // Accepted before the scheduler starts: the whole backlog is due at once.
      for (let i = 0; i < EVENTS; i++) await scheduler.accept(null, { service: 'gone', cid: `e${i}`, method: 'POST', input: {} });
      setImmediate(tick);
      scheduler.applyConfig({ channel_rest: [] } as unknown as SvcConfig);
      for (let i = 0; i < 500 && seenAt.length < EVENTS; i++) await new Promise((r) => setTimeout(r, 10));
      expect(seenAt).toHaveLength(EVENTS);
      // Every attempt after the first began in a later turn than the one before it.
      const later = seenAt.filter((turn, i) => i > 0 && turn > seenAt[i - 1]!).length;
      expect(later).toBe(EVENTS - 1);
      await scheduler.stop();
    } finally {
      ticking = false;
      store.close();
    }
  });
});

describe("a channel's queue held by its tenant's quota", () => {
  it('waits for the Retry-After, and not for an hour when the clock is set back an hour', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12));
    const runs: string[] = [];
    const { scheduler, store, table } = await schedulerOn(async (req) => {
      runs.push(req.cid);
      return runs.length === 1 ? { ok: false, kind: 'TENANT_QUOTA', message: 'Quota concurrent_calls reached', permanent: false, retryAfterMs: 30_000 } : { ok: true, status: 200 };
    }, clock);
    try {
      scheduler.applyConfig({ channel_rest: [{ name: 'acme/ingest', use_queue: true }] } as unknown as SvcConfig);
      const event = (cid: string) => ({ service: 'acme/echo', cid, method: 'POST', input: {} });
      await scheduler.accept('acme/ingest', event('e1'));
      for (let i = 0; i < 100 && runs.length < 1; i++) await new Promise((r) => setTimeout(r, 10));
      expect(runs).toHaveLength(1);
      // Held: a new event of the same queue does not start.
      await scheduler.accept('acme/ingest', event('e2'));
      await new Promise((r) => setTimeout(r, 200));
      expect(runs).toHaveLength(1);
      expect(scheduler.depthOf('acme/ingest')).toBe(2);
      // The listing shows both due at the hold's end.
      const holdEnd = new Date(clock.now() + 30_000).toISOString();
      expect((await listEvents(table, { channel: 'acme/ingest', limit: 100 }, undefined, scheduler)).map((e) => e.nextAttemptAt)).toEqual([holdEnd, holdEnd]);
      // The wall clock goes back an hour: the hold ends; the new event runs (the refused one keeps its due time, as a retry does).
      clock.advance(-3_600_000);
      await scheduler.accept('acme/ingest', event('e3'));
      for (let i = 0; i < 100 && runs.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
      expect(runs.length).toBeGreaterThanOrEqual(2);
      await scheduler.stop();
    } finally {
      store.close();
    }
  });
});

describe("the background queue held per tenant by a tenant's quota", () => {
  it("holds the refused tenant's events without attempting them, and runs the other tenants' and the platform's meanwhile", async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12));
    const runs: string[] = [];
    let refuseAcme = true;
    const { scheduler, store, table } = await schedulerOn(async (req) => {
      // The event's own CID (each attempt gets a CID of its own).
      runs.push(req.delivery!.cid);
      if (req.service.startsWith('acme/') && refuseAcme) {
        refuseAcme = false;
        return { ok: false, kind: 'TENANT_QUOTA', message: 'Quota cpu_ms_per_minute reached', permanent: false, retryAfterMs: 30_000 };
      }
      return { ok: true, status: 200 };
    }, clock);
    const settled = async (count: number) => {
      for (let i = 0; i < 200 && runs.length < count; i++) await new Promise((r) => setTimeout(r, 10));
      // Nothing more comes on its own: give it the turns it would take.
      await new Promise((r) => setTimeout(r, 100));
    };
    try {
      // Accepted before the scheduler starts: a backlog, acme's first.
      for (let i = 1; i <= 5; i++) await scheduler.accept(null, { service: 'acme/work', cid: `a${i}`, method: 'POST', input: {} });
      for (let i = 1; i <= 3; i++) await scheduler.accept(null, { service: 'globex/work', cid: `g${i}`, method: 'POST', input: {} });
      await scheduler.accept(null, { service: 'platform-work', cid: 'p1', method: 'POST', input: {} });
      scheduler.applyConfig({ channel_rest: [] } as unknown as SvcConfig);
      await settled(5);
      // acme's first event was refused; its four others were never attempted; globex's and the platform's ran.
      expect(runs).toEqual(['a1', 'g1', 'g2', 'g3', 'p1']);
      expect(scheduler.depthOf(null)).toBe(5);
      const acme = await store.all<{ attempts: number; state: string }>("SELECT attempts, state FROM use_queue_event WHERE service = 'acme/work'");
      expect(acme).toEqual(Array.from({ length: 5 }, () => ({ attempts: 0, state: 'pending' })));
      // The hold is in memory only: an operator's listing shows each held event due at its end, not at its stored time.
      const holdEnd = new Date(clock.now() + 30_000).toISOString();
      const listed = await listEvents(table, { channel: null, limit: 100 }, undefined, scheduler);
      expect(listed.map((e) => [e.service, e.nextAttemptAt])).toEqual(Array.from({ length: 5 }, () => ['acme/work', holdEnd]));
      // A new acme event during the hold waits too; a new globex event runs.
      await scheduler.accept(null, { service: 'acme/work', cid: 'a6', method: 'POST', input: {} });
      await scheduler.accept(null, { service: 'globex/work', cid: 'g4', method: 'POST', input: {} });
      await settled(6);
      expect(runs.slice(5)).toEqual(['g4']);
      // The hold ends (the Retry-After has passed): acme's events run, oldest first.
      clock.advance(30_001);
      await scheduler.accept(null, { service: 'globex/work', cid: 'g5', method: 'POST', input: {} });
      await settled(13);
      expect(runs.slice(6).sort()).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'g5']);
      expect(runs.slice(6).filter((c) => c.startsWith('a'))).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
      expect(scheduler.depthOf(null)).toBe(0);
      await scheduler.stop();
    } finally {
      store.close();
    }
  });
});
