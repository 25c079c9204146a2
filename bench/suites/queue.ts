import { join } from 'node:path';
import { sqliteDriver } from '../../kernel/store/sqlite-driver.ts';
import { interleaved, load, printTable, rssMb, withSvc, type Load, type Row, type Target } from '../lib.ts';

const NOOP = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ ok: true, n: ctx.input.n }) });\n`;
const BODY = JSON.stringify({ n: 1, note: 'an event of a few dozen bytes' });
const POST = { method: 'POST', body: BODY, headers: { 'content-type': 'application/json' } };

/** Events still in the queue, read from the server's SQLite file (WAL: readers do not block it). */
function depthReader(t: Target): () => number {
  const Database = sqliteDriver();
  const db = new Database(join(t.dir!, 'data', 'svc.db'), { readonly: true });
  const count = db.prepare('SELECT COUNT(*) AS n FROM use_queue_event');
  return () => (count.get() as { n: number }).n;
}

/** Waits until the queue is empty; the drain rate of what was left when the load stopped. */
async function drain(depth: () => number): Promise<{ events: number; perSecond: number }> {
  const start = performance.now();
  const events = depth();
  while (depth() > 0) await new Promise((r) => setTimeout(r, 50));
  const seconds = (performance.now() - start) / 1000;
  return { events, perSecond: events / seconds };
}

/**
 * Issue 12: requests accepted per second on a queued channel (stored durably, answered 200
 * {cid}) against the same trivial service on a plain channel, in the same run; then the drain
 * rate of the backlog the load left, with the default global cap (`max_running`: workers − 1)
 * and with 4.
 */
export async function run(): Promise<void> {
  const rows: Row[] = [];
  for (const maxRunning of [undefined, 4]) {
    const config = {
      ...(maxRunning ? { plugins: { 'use-queue': { config: { max_running: maxRunning } } } } : {}),
      channel_rest: [
        { name: 'plain', url_path: '/plain', service: 'noop', method: 'POST', security: 'none' },
        { name: 'queued', url_path: '/queued', service: 'noop', method: 'POST', security: 'none', use_queue: true, delivery: { max_depth: 1_000_000, concurrency: 4 } },
      ],
    };
    await withSvc(config, { 'noop.ts': NOOP }, async (t) => {
      const depth = depthReader(t);
      const drains: Array<{ events: number; perSecond: number }> = [];
      let peakRss = 0;
      const [plain, queued] = await interleaved([
        () => load(`${t.url}/plain`, POST),
        async (): Promise<Load> => {
          const l = await load(`${t.url}/queued`, POST);
          peakRss = Math.max(peakRss, rssMb(t.pids));
          drains.push(await drain(depth));
          return l;
        },
      ]);
      const cap = maxRunning ?? 'default (1)';
      if (maxRunning === undefined) rows.push({ name: 'plain channel → trivial service', load: plain!, ratio: 1, rssMb: rssMb(t.pids) });
      rows.push({ name: `queued channel, accepted (max_running ${cap})`, load: queued!, ratio: queued!.rps / plain!.rps, rssMb: peakRss, note: `plain in the same run: ${Math.round(plain!.rps)} req/s` });
      const best = drains.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
      rows.push({ name: `drain of the backlog, trivial service (max_running ${cap})`, value: `${Math.round(best.perSecond)} events/s`, note: `best of ${drains.length}: ${drains.map((d) => `${d.events} in ${(d.events / d.perSecond).toFixed(1)} s`).join(', ')}` });
    });
  }
  printTable('Use queue: accepted events vs a plain channel (goal ≥ 0.5×), and the drain rate', rows, 'vs plain');
}
