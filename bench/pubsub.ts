/**
 * Pub/sub throughput in one run, beside two baselines: bare Fastify hello-world and a raw
 * better-sqlite3 insert+delete loop. Rows: variant A and B publish req/s and publish→get
 * messages/s, with 1 and 50 concurrent clients, GD on and off (variant B is always GD).
 * Goals: durable publish at ≥ 0.30 of bare Fastify req/s at 50 clients (issue 6); a getter draining
 * concurrently costs publishers at most 20% (issue 14; the flow rows' "× publishing alone").
 * Run: node --import tsx bench/pubsub.ts   (BENCH_SECONDS=5 by default; prints markdown rows)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLK_TCK, drain, getter, getterLoop, load, printTable, procStat, publishRequest, PUBSUB, rssMb, SECONDS, withBareFastify, withSvc, type Load, type Row, type Target } from './lib.ts';
import pino from 'pino';
import { sqliteDriver } from '../kernel/store/sqlite-driver.ts';
import { SqliteStore } from '../kernel/store/sqlite.ts';
import { systemClock } from '../kernel/platform/clock.ts';
import { PubSubEngine } from '../plugins/pubsub/engine/engine.ts';

const Database = sqliteDriver();
const MESSAGE = PUBSUB.message;

async function publishRow(t: Target, variant: 'A' | 'B', gd: boolean, connections: number): Promise<Load> {
  const { url, ...req } = publishRequest(t.url, variant, gd, '/bench/pub');
  const result = await load(url, { ...req, connections });
  // Empties the publish-only queue between rows, so rows do not pay for the previous row's backlog.
  await drain(getter(t.url, 'A', PUBSUB.publisher, '/bench/pub'));
  return result;
}

/**
 * Publishers (autocannon, `connections` clients) and one getter loop run together; the row is
 * the rate at which messages reached the getter while the publishers ran.
 */
async function flowRow(t: Target, variant: 'A' | 'B', gd: boolean, connections: number): Promise<{ rate: number; publish: Load; backlog: number }> {
  const { url, ...req } = publishRequest(t.url, variant, gd, '/bench/flow');
  const get = getter(t.url, variant, PUBSUB.reader, '/bench/flow');
  const loop = getterLoop(get);
  let started = 0;
  let before = 0;
  const publish = await load(url, { ...req, connections }, { onMeasure: () => ((started = Date.now()), (before = loop.taken())) });
  const rate = (loop.taken() - before) / ((Date.now() - started) / 1000);
  await loop.stop();
  return { rate, publish, backlog: await drain(get) };
}

/** The floor under any durable queue on this disk: one row in, one row out. */
function sqliteBaseline(synchronous: 'NORMAL' | 'FULL'): number {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-sqlite-'));
  try {
    const db = new Database(join(dir, 'raw.db'));
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    db.exec('CREATE TABLE q (id INTEGER PRIMARY KEY, data TEXT NOT NULL)');
    const insert = db.prepare('INSERT INTO q (data) VALUES (?)');
    const remove = db.prepare('DELETE FROM q WHERE id = ?');
    const data = JSON.stringify(MESSAGE);
    const deadline = Date.now() + SECONDS * 1000;
    let n = 0;
    while (Date.now() < deadline) {
      for (let i = 0; i < 100; i++) remove.run(insert.run(data).lastInsertRowid);
      n += 100;
    }
    db.close();
    return n / SECONDS;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU seconds of this process's main thread (the event loop), from /proc. */
function mainThreadSeconds(): number {
  return procStat(`${process.pid}/task/${process.pid}`)!.ticks / CLK_TCK;
}

/**
 * The engine alone, in this process: 50 publishers awaiting GD publishes to one subscribed topic
 * on a SQLite file, no HTTP. What the store and the engine cost the kernel's event loop per
 * publish (the WAL flushes run on libuv's pool); the queue is emptied afterwards.
 */
async function engineAlone(): Promise<{ rate: number; mainUs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-engine-'));
  const store = new SqliteStore(join(dir, 'svc.db'));
  const engine = await PubSubEngine.open({ store, clock: systemClock, log: pino({ level: 'silent' }), defaultMaxDepth: 10_000_000, sweepIntervalMs: 0 });
  try {
    await engine.applyConfig({ topics: [{ name: '/bench/pub' }], endpoints: [{ name: 'ep.bench', security: 'sec.bench', pub: ['/bench/*'], sub: ['/bench/*'] }], subscriptions: [] });
    const { subKey } = await engine.subscribe('ep.bench', '/bench/pub');
    const publish = () => engine.publish({ topic: '/bench/pub', data: MESSAGE.data, mimeType: 'application/json', priority: 5, expiration: undefined, hasGd: true, publisher: 'ep.bench' });
    const run = async (ms: number) => {
      const deadline = performance.now() + ms;
      let n = 0;
      await Promise.all(Array.from({ length: 50 }, async () => {
        while (performance.now() < deadline) (await publish(), n++);
      }));
      return n;
    };
    await run(1000);
    const cpu = mainThreadSeconds();
    const started = performance.now();
    const n = await run(SECONDS * 1000);
    const result = { rate: n / ((performance.now() - started) / 1000), mainUs: ((mainThreadSeconds() - cpu) * 1e6) / n };
    for (let d = engine.take([subKey], { order: 'priority', maxMessages: 10_000, maxBytes: Infinity }); d.messages.length > 0; d = engine.take([subKey], { order: 'priority', maxMessages: 10_000, maxBytes: Infinity })) d.ack();
    return result;
  } finally {
    await engine.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows: Row[] = [];
const bare = new Map<number, Load>();
await withBareFastify(async (t) => {
  for (const c of [1, 50]) {
    const l = await load(`${t.url}/hello`, { connections: c });
    bare.set(c, l);
    rows.push({ name: `bare Fastify hello-world, ${c} client${c > 1 ? 's' : ''}`, load: l, ratio: 1, rssMb: rssMb(t.pids) });
  }
  // Not the goal's baseline, but the fair floor of a publish: a POST with a JSON body, parsed and answered.
  const post = await load(`${t.url}/echo`, { connections: 50, method: 'POST', body: JSON.stringify(MESSAGE), headers: { 'content-type': 'application/json' } });
  rows.push({ name: 'bare Fastify POST of the same JSON message, 50 clients', load: post, ratio: post.rps / bare.get(50)!.rps, note: 'HTTP-only floor of a publish' });
});
for (const sync of ['NORMAL', 'FULL'] as const) {
  rows.push({
    name: `raw better-sqlite3 insert+delete loop, WAL synchronous=${sync}`,
    value: Math.round(sqliteBaseline(sync)).toString(),
    note: sync === 'FULL' ? 'pairs/s, one fsync per statement (autocommit)' : 'pairs/s, autocommit, no fsync per commit',
  });
}

const inProcess = await engineAlone();
rows.push({
  name: 'the engine alone, in process: GD publish, 50 publishers, SQLite file',
  value: Math.round(inProcess.rate).toString(),
  note: `publishes/s, no HTTP; the event loop's CPU ${inProcess.mainUs.toFixed(1)} µs per publish (store and engine)`,
});

/** Publish-only req/s by variant, GD and clients: what the flow rows' publish rate is held against. */
const alone = new Map<string, number>();
await withSvc(PUBSUB.config, {}, async (t) => {
  for (const c of [1, 50]) {
    const vs = bare.get(c)!.rps;
    for (const gd of [false, true]) {
      const l = await publishRow(t, 'A', gd, c);
      alone.set(`A ${gd} ${c}`, l.rps);
      rows.push({ name: `A publish, GD ${gd ? 'on' : 'off'}, ${c} client${c > 1 ? 's' : ''}`, load: l, ratio: l.rps / vs, rssMb: rssMb(t.pids) });
    }
    const b = await publishRow(t, 'B', true, c);
    alone.set(`B true ${c}`, b.rps);
    rows.push({ name: `B publish (always GD), ${c} client${c > 1 ? 's' : ''}`, load: b, ratio: b.rps / vs, rssMb: rssMb(t.pids) });
  }
  for (const c of [1, 50]) {
    for (const [variant, gd] of [['A', false], ['A', true], ['B', true]] as const) {
      const f = await flowRow(t, variant, gd, c);
      rows.push({
        name: `${variant} publish→get, GD ${gd ? 'on' : 'off'}, ${c} publisher${c > 1 ? 's' : ''} + 1 getter`,
        value: Math.round(f.rate).toString(),
        note:
          `messages/s delivered; publish ${Math.round(f.publish.rps)} req/s (${(f.publish.rps / alone.get(`${variant} ${gd} ${c}`)!).toFixed(2)}× publishing alone); backlog at end ${f.backlog}` +
          (f.publish.non2xx ? `; non-2xx ${f.publish.non2xx}` : ''),
      });
    }
  }
});

printTable('Pub/sub: publish and publish→get vs bare Fastify (goal: durable publish ≥ 0.30× at 50 clients)', rows, 'vs bare');
