import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { SqliteStore } from '../../../../kernel/store/sqlite.ts';
import { NodeRegistry } from '../../../../plugins/cluster/nodes/registry.ts';

/** Two nodes on one store, as nodes of a cluster share one database: each lists the other. */
const TIMING = { heartbeatMs: 60_000, downAfterMs: 15_000, forgetAfterMs: 3_600_000 };
const dirs: string[] = [];
const stores: SqliteStore[] = [];

function store(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), 'svc-nodes-'));
  dirs.push(dir);
  const s = new SqliteStore(join(dir, 'svc.db'));
  stores.push(s);
  return s;
}

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('node registry', () => {
  it('lists every node on the store: up while its heartbeat is on time, down when late, stopped after a clean stop, gone after forget_after_ms', async () => {
    const db = store();
    const clock = new ManualClock();
    const errors: Array<string | undefined> = [];
    const a = new NodeRegistry(db, clock, TIMING, 'node-a', '1.2.3', (e) => errors.push(e));
    const b = new NodeRegistry(db, clock, TIMING, 'node-b', '1.2.3', (e) => errors.push(e));
    await a.start();
    await b.start();
    expect(a.self.id).not.toBe(b.self.id);
    expect(a.self.id).toMatch(/^[0-9a-f]{12}$/);

    let seen = await a.list();
    expect(seen.map((n) => [n.name, n.state, n.self])).toEqual(
      expect.arrayContaining([
        ['node-a', 'up', true],
        ['node-b', 'up', false],
      ]),
    );
    expect(seen.find((n) => n.name === 'node-b')).toMatchObject({ pid: process.pid, version: '1.2.3', runtime: process.version, started_at: new Date(clock.now()).toISOString() });

    // b keeps beating, a goes silent (as after kill -9).
    clock.advance(10_000);
    await b.beat();
    clock.advance(10_000);
    await b.beat();
    seen = await b.list();
    expect(seen.find((n) => n.name === 'node-a')!.state).toBe('down');
    expect(seen.find((n) => n.name === 'node-b')!.state).toBe('up');

    await b.stop();
    expect((await a.list()).find((n) => n.name === 'node-b')!.state).toBe('stopped');

    clock.advance(TIMING.forgetAfterMs + 1);
    expect(await a.list()).toEqual([]);
    await a.stop();
    expect(errors).toEqual([]);
  });

  it('a node the others forgot (silent past forget_after_ms: a suspended machine) writes its row again at its next heartbeat', async () => {
    const db = store();
    const clock = new ManualClock();
    const errors: Array<string | undefined> = [];
    let rejoined = 0;
    const a = new NodeRegistry(db, clock, TIMING, 'node-a', '1.2.3', (e) => errors.push(e), () => rejoined++);
    await a.start();
    clock.advance(TIMING.forgetAfterMs + 1);
    // A node starting now forgets a: its row goes.
    const b = new NodeRegistry(db, clock, TIMING, 'node-b', '1.2.3', (e) => errors.push(e));
    await b.start();
    expect((await b.list()).map((n) => n.name)).toEqual(['node-b']);

    await a.beat();
    expect(rejoined).toBe(1);
    expect(await b.liveIds()).toContain(a.self.id);
    expect((await b.list()).find((n) => n.id === a.self.id)).toMatchObject({ name: 'node-a', state: 'up', started_at: new Date(clock.now() - TIMING.forgetAfterMs - 1).toISOString() });
    await a.beat();
    expect(rejoined).toBe(1);
    expect(errors).toEqual([]);
    await a.stop();
    await b.stop();
  });

  it('reports a failing heartbeat once, and its recovery once', async () => {
    const db = store();
    const clock = new ManualClock();
    const errors: Array<string | undefined> = [];
    const a = new NodeRegistry(db, clock, TIMING, 'node-a', '1.2.3', (e) => errors.push(e));
    await a.start();
    await db.run('ALTER TABLE svc_node RENAME TO svc_node_away');
    await a.beat();
    await a.beat();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/svc_node/);
    await db.run('ALTER TABLE svc_node_away RENAME TO svc_node');
    await a.beat();
    await a.beat();
    expect(errors).toEqual([errors[0], undefined]);
    await a.stop();
  });
});
