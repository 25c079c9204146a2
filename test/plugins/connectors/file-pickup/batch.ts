import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { json, Upstream } from '../../outgoing/rest/upstream.ts';
import { drop, outgoingCounter } from './support.ts';

/**
 * The batch the exactly-once tests drop: FILES files at once, run by the RECORD service against
 * a counting upstream that answers after 20 ms (so runs are in flight at any moment). Each node
 * may post to its own upstream, so the tally tells which node ran what.
 */
export const FILES = 100;
export const CONCURRENCY = 8;

/** An upstream that answers each call after 20 ms; while `hold.on`, it keeps new calls waiting unanswered (a node's runs stay under way). */
export async function slowCounter(cleanup: Array<() => unknown>, hold: { on: boolean } = { on: false }): Promise<Upstream> {
  const up = await new Upstream().route('/hit', (_req, res) => (hold.on ? undefined : setTimeout(() => json(res, 200, { ok: true }), 20))).start();
  cleanup.push(() => up.close());
  return up;
}

export function batchConfig(up: Upstream, folder: string, head = '', delivery?: Record<string, unknown>): string {
  const channel = { name: 'drop', source: { local: { path: folder } }, service: 'record', pattern: '*.csv', poll: { every: '100ms' }, stable: { polls: 1 }, concurrency: CONCURRENCY, ...(delivery && { delivery }) };
  return `${head}${outgoingCounter(up)}channel_file:\n  - ${JSON.stringify(channel)}\n`;
}

const fileName = (i: number) => `f${String(i).padStart(3, '0')}.csv`;

export function dropAll(folder: string): void {
  for (let i = 0; i < FILES; i++) drop(folder, fileName(i), `file ${i}\n`);
}

export interface Tally {
  runs: number;
  misses: number;
  doubles: number;
  moved: number;
  /** Runs heard by each upstream (one per node), when there are several. */
  split?: number[];
}

export function tally(ups: Upstream | Upstream[], folder: string): Tally {
  const all = Array.isArray(ups) ? ups : [ups];
  const counts = new Map<string, number>();
  for (const up of all) {
    for (const h of up.hits('/hit')) {
      const name = (JSON.parse(h.body) as { name: string }).name;
      counts.set(name, (counts.get(name) ?? 0) + 1);
    }
  }
  let misses = 0;
  for (let i = 0; i < FILES; i++) if (!counts.has(fileName(i))) misses++;
  const doubles = [...counts.values()].reduce((n, c) => n + c - 1, 0);
  const moved = existsSync(join(folder, 'done')) ? readdirSync(join(folder, 'done')).length : 0;
  const runs = all.reduce((n, up) => n + up.hits('/hit').length, 0);
  const t: Tally = { runs, misses, doubles, moved };
  if (all.length > 1) t.split = all.map((up) => up.hits('/hit').length);
  return t;
}

/** Files still in the folder (not moved to done/ or error/). */
export function leftInFolder(folder: string): number {
  return readdirSync(folder).filter((n) => n.endsWith('.csv')).length;
}

export async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
