import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { makeProject, startCli, type CliServer } from '../../../helpers/cli.ts';
import { startKernel } from '../../../helpers/kernel.ts';
import { PG_SCHEMA_PREFIX, dropPgSchemas, pgSchemaUrl } from '../../../helpers/store.ts';
import { json, Upstream } from '../../outgoing/rest/upstream.ts';
import { drop, outgoingCounter, RECORD, tmpFolder } from './support.ts';

/**
 * Exactly once per file: 100 files dropped at once, each run once, also across a restart, a
 * kill -9 halfway and two nodes polling one folder. A counting upstream hears every run (it
 * answers after 20 ms, so runs are in flight at any moment); the tests count misses and doubles
 * and print them. A run cut by a kill may run again (at least once for those): at most the
 * number in flight at the kill.
 */
const FILES = 100;
const CONCURRENCY = 8;
const SUITE = `${PG_SCHEMA_PREFIX}file_pickup_once_`;
const cleanup: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});
afterAll(() => dropPgSchemas(SUITE));

async function slowCounter(): Promise<Upstream> {
  const up = await new Upstream().route('/hit', (_req, res) => setTimeout(() => json(res, 200, { ok: true }), 20)).start();
  cleanup.push(() => up.close());
  return up;
}

function config(up: Upstream, folder: string, head = ''): string {
  return `${head}${outgoingCounter(up)}channel_file:\n  - ${JSON.stringify({ name: 'drop', source: { local: { path: folder } }, service: 'record', pattern: '*.csv', poll: { every: '100ms' }, stable: { polls: 1 }, concurrency: CONCURRENCY })}\n`;
}

function dropAll(folder: string): void {
  for (let i = 0; i < FILES; i++) drop(folder, `f${String(i).padStart(3, '0')}.csv`, `file ${i}\n`);
}

function tally(up: Upstream, folder: string): { runs: number; misses: number; doubles: number; moved: number } {
  const counts = new Map<string, number>();
  for (const h of up.hits('/hit')) {
    const name = (JSON.parse(h.body) as { name: string }).name;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  let misses = 0;
  for (let i = 0; i < FILES; i++) if (!counts.has(`f${String(i).padStart(3, '0')}.csv`)) misses++;
  const doubles = [...counts.values()].reduce((n, c) => n + c - 1, 0);
  const moved = existsSync(join(folder, 'done')) ? readdirSync(join(folder, 'done')).length : 0;
  return { runs: up.hits('/hit').length, misses, doubles, moved };
}

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('channel_file exactly once', () => {
  it(`runs ${FILES} files dropped at once each once, across a restart halfway`, async () => {
    const up = await slowCounter();
    const folder = tmpFolder('once');
    const dir = tmpFolder('once-node');
    cleanup.push(() => rmSync(folder, { recursive: true, force: true }), () => rmSync(dir, { recursive: true, force: true }));
    dropAll(folder);
    const first = await startKernel({ config: config(up, folder), services: { 'record.ts': RECORD }, dir });
    await until(() => up.hits('/hit').length >= FILES / 2, 30_000, 'half the runs');
    await first.close();
    const second = await startKernel({ config: config(up, folder), dir });
    cleanup.push(() => second.close());
    await until(() => tally(up, folder).moved === FILES, 30_000, 'every file moved');
    const t = tally(up, folder);
    console.log(`file pickup, ${FILES} files, restart halfway: ${JSON.stringify(t)}`);
    expect(t).toMatchObject({ misses: 0, doubles: 0, moved: FILES });
  });

  it(`runs ${FILES} files each once when svc is killed -9 halfway (doubles at most the runs in flight)`, async () => {
    const up = await slowCounter();
    const folder = tmpFolder('kill');
    cleanup.push(() => rmSync(folder, { recursive: true, force: true }));
    const project = makeProject(config(up, folder), { 'record.ts': RECORD });
    cleanup.push(() => rmSync(project, { recursive: true, force: true }));
    dropAll(folder);
    const first = await startCli(project);
    await until(() => up.hits('/hit').length >= FILES / 2, 30_000, 'half the runs');
    await first.stop('SIGKILL');
    const atKill = tally(up, folder);
    const second: CliServer = await startCli(project);
    cleanup.push(() => second.stop('SIGTERM'));
    await until(() => tally(up, folder).moved === FILES, 60_000, 'every file moved');
    const t = tally(up, folder);
    console.log(`file pickup, ${FILES} files, kill -9 after ${atKill.runs} runs (${atKill.moved} moved): ${JSON.stringify(t)}`);
    expect(t.misses).toBe(0);
    expect(t.moved).toBe(FILES);
    expect(t.doubles).toBeLessThanOrEqual(CONCURRENCY);
  });

  it(`runs ${FILES} files each once with two nodes polling one folder (PostgreSQL)`, async () => {
    const up = await slowCounter();
    const folder = tmpFolder('cluster');
    cleanup.push(() => rmSync(folder, { recursive: true, force: true }));
    const store = await pgSchemaUrl(`${SUITE}${Date.now()}`);
    const head = `server:\n  store: "${store}"\nplugins:\n  nodes: { config: { heartbeat_ms: 200, down_after_ms: 1000 } }\n`;
    const nodes: CliServer[] = [];
    for (const name of ['a', 'b']) {
      const project = makeProject(config(up, folder, head), { 'record.ts': RECORD });
      cleanup.push(() => rmSync(project, { recursive: true, force: true }));
      nodes.push(await startCli(project, { SVC_NODE_NAME: `node-${name}` }));
    }
    cleanup.push(async () => Promise.all(nodes.map((n) => n.stop('SIGTERM'))));
    dropAll(folder);
    await until(() => tally(up, folder).moved === FILES, 60_000, 'every file moved');
    const t = tally(up, folder);
    console.log(`file pickup, ${FILES} files, two nodes on PostgreSQL: ${JSON.stringify(t)}`);
    expect(t).toMatchObject({ misses: 0, doubles: 0, moved: FILES });
  });
});
