/**
 * Pub/sub throughput in one run, beside two baselines: bare Fastify hello-world and a raw
 * better-sqlite3 insert+delete loop. Rows: variant A and B publish req/s and publish→get
 * messages/s, with 1 and 50 concurrent clients, GD on and off (variant B is always GD).
 * Goal (issue 6): durable publish at ≥ 0.30 of bare Fastify req/s at 50 clients.
 * Run: node --import tsx bench/pubsub.ts   (BENCH_SECONDS=5 by default; prints markdown rows)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, printTable, rssMb, SECONDS, withBareFastify, withSvc, type Load, type Row, type Target } from './lib.ts';
import { sqliteDriver } from '../kernel/store/sqlite-driver.ts';

const Database = sqliteDriver();

const PASSWORD = 'bench-password-1';
const AUTH = `Basic ${Buffer.from(`bench:${PASSWORD}`).toString('base64')}`;
const READER = `Basic ${Buffer.from(`reader:${PASSWORD}`).toString('base64')}`;
const JSON_HEADERS = { authorization: AUTH, 'content-type': 'application/json' };

const config = {
  security: [
    { name: 'sec.bench', type: 'basic_auth', username: 'bench', password: PASSWORD },
    { name: 'sec.reader', type: 'basic_auth', username: 'reader', password: PASSWORD },
  ],
  pubsub_topic: [
    { name: '/bench/pub', max_depth: 10_000_000 },
    { name: '/bench/flow', max_depth: 10_000_000 },
  ],
  pubsub_endpoint: [
    { name: 'ep.bench', security: 'sec.bench', pub: ['/bench/*'], sub: ['/bench/*'] },
    { name: 'ep.reader', security: 'sec.reader', sub: ['/bench/flow'] },
  ],
  // Publish-only rows need a subscriber too, or every message would be retained in the topic.
  pubsub_subscription: [
    { endpoint: 'ep.bench', topics: ['/bench/pub'] },
    { endpoint: 'ep.reader', topics: ['/bench/flow'] },
  ],
};

const MESSAGE = { data: { order: 12345, customer: 'ACME', lines: [{ sku: 'X-1', qty: 2 }] } };

/** Empties the publish-only queue between rows, so rows do not pay for the previous row's backlog. */
async function drainA(t: Target, topic: string, auth: string): Promise<number> {
  let n = 0;
  for (;;) {
    const res = await fetch(`${t.url}/svc/pubsub/topic${topic}`, { method: 'PATCH', headers: { authorization: auth } });
    const list = (await res.json()) as unknown[];
    if (list.length === 0) return n;
    n += list.length;
  }
}

async function publishRow(t: Target, variant: 'A' | 'B', gd: boolean, connections: number): Promise<Load> {
  const url = variant === 'A' ? `${t.url}/svc/pubsub/topic/bench/pub` : `${t.url}/pubsub/topic/bench/pub`;
  const body = JSON.stringify(variant === 'A' ? { ...MESSAGE, has_gd: gd } : MESSAGE);
  const result = await load(url, { method: 'POST', body, headers: JSON_HEADERS, connections });
  await drainA(t, '/bench/pub', AUTH);
  return result;
}

/**
 * Publishers (autocannon, `connections` clients) and one getter loop run together; the row is
 * the rate at which messages reached the getter while the publishers ran.
 */
async function flowRow(t: Target, variant: 'A' | 'B', gd: boolean, connections: number): Promise<{ rate: number; publish: Load; backlog: number }> {
  const url = variant === 'A' ? `${t.url}/svc/pubsub/topic/bench/flow` : `${t.url}/pubsub/topic/bench/flow`;
  const body = JSON.stringify(variant === 'A' ? { ...MESSAGE, has_gd: gd } : MESSAGE);
  let running = true;
  let received = 0;
  let counting = false;
  const get = async (): Promise<number> => {
    if (variant === 'A') {
      const res = await fetch(`${t.url}/svc/pubsub/topic/bench/flow`, { method: 'PATCH', headers: { authorization: READER } });
      return ((await res.json()) as unknown[]).length;
    }
    const res = await fetch(`${t.url}/pubsub/messages/get`, { method: 'POST', headers: { authorization: READER, 'content-type': 'application/json' }, body: '{"max_messages":1000}' });
    return ((await res.json()) as { message_count: number }).message_count;
  };
  const getter = (async () => {
    while (running) {
      const n = await get();
      if (counting) received += n;
      if (n === 0) await new Promise((r) => setImmediate(r));
    }
  })();
  // Warm-up inside load() takes one second; count from the measured part on.
  const warmup = setTimeout(() => (counting = true), 1_000);
  const started = Date.now() + 1_000;
  const publish = await load(url, { method: 'POST', body, headers: JSON_HEADERS, connections });
  const elapsed = (Date.now() - started) / 1000;
  running = false;
  clearTimeout(warmup);
  await getter;
  let backlog = 0;
  for (let n = await get(); n > 0; n = await get()) backlog += n;
  return { rate: received / elapsed, publish, backlog };
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

await withSvc(config, {}, async (t) => {
  for (const c of [1, 50]) {
    const vs = bare.get(c)!.rps;
    for (const gd of [false, true]) {
      const l = await publishRow(t, 'A', gd, c);
      rows.push({ name: `A publish, GD ${gd ? 'on' : 'off'}, ${c} client${c > 1 ? 's' : ''}`, load: l, ratio: l.rps / vs, rssMb: rssMb(t.pids) });
    }
    const b = await publishRow(t, 'B', true, c);
    rows.push({ name: `B publish (always GD), ${c} client${c > 1 ? 's' : ''}`, load: b, ratio: b.rps / vs, rssMb: rssMb(t.pids) });
  }
  for (const c of [1, 50]) {
    for (const [variant, gd] of [['A', false], ['A', true], ['B', true]] as const) {
      const f = await flowRow(t, variant, gd, c);
      rows.push({
        name: `${variant} publish→get, GD ${gd ? 'on' : 'off'}, ${c} publisher${c > 1 ? 's' : ''} + 1 getter`,
        value: Math.round(f.rate).toString(),
        note: `messages/s delivered; publish ${Math.round(f.publish.rps)} req/s; backlog at end ${f.backlog}` + (f.publish.non2xx ? `; non-2xx ${f.publish.non2xx}` : ''),
      });
    }
  }
});

printTable('Pub/sub: publish and publish→get vs bare Fastify (goal: durable publish ≥ 0.30× at 50 clients)', rows, 'vs bare');
