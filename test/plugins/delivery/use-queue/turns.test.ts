import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Scheduler } from '../../../../plugins/delivery/use-queue/scheduler.ts';
import { DEFAULT_DELIVERY } from '../../../../plugins/delivery/use-queue/schema.ts';
import { QueueTable } from '../../../../plugins/delivery/use-queue/store.ts';
import { SqliteStore } from '../../../../kernel/store/sqlite.ts';
import type { EventOutcome, SvcConfig } from '../../../../sdk/plugin/index.ts';

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

describe('a backlog of attempts that end at once', () => {
  it('runs one attempt per turn of the event loop, not the whole backlog in one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-queue-turns-'));
    dirs.push(dir);
    const store = new SqliteStore(join(dir, 'svc.db'));
    // Turns of the event loop: a check-phase callback that schedules itself counts one per turn.
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns++;
      if (ticking) setImmediate(tick);
    };
    try {
      const table = await QueueTable.open(store);
      const seenAt: number[] = [];
      const refused: EventOutcome = { ok: false, kind: 'TENANT_QUOTA', message: 'quota reached', permanent: true };
      const scheduler = new Scheduler({
        table,
        run: async () => {
          seenAt.push(turns);
          return refused;
        },
        newCid: (() => {
          let n = 0;
          return () => `cid${n++}`;
        })(),
        clock: { now: () => Date.now() },
        log: pino({ level: 'silent' }),
        maxRunning: 1,
        background: DEFAULT_DELIVERY,
        stopWaitMs: 1_000,
        random: () => 0.5,
        node: 'n1',
        liveNodes: async () => new Set(['n1']),
      });
      await scheduler.load();
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
