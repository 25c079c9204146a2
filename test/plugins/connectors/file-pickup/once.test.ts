import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { makeProject, runCliAsync, startCli, type CliServer } from '../../../helpers/cli.ts';
import { startKernel } from '../../../helpers/kernel.ts';
import { batchConfig as config, CONCURRENCY, dropAll, FILES, leftInFolder, slowCounter, tally, until } from './batch.ts';
import { RECORD, tmpFolder } from './support.ts';

/**
 * Exactly once per file on one node: 100 files dropped at once, each run once across a restart
 * and across a kill -9 halfway, in place and through the Use queue. A counting upstream hears
 * every run; the tests count misses and doubles and print them. A run cut by a kill may run
 * again (at least once for those): at most the number in flight at the kill.
 * Two nodes on one folder: cluster.test.ts.
 */
const cleanup: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

describe('channel_file exactly once', () => {
  it(`runs ${FILES} files dropped at once each once, across a restart halfway`, async () => {
    const up = await slowCounter(cleanup);
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
    const up = await slowCounter(cleanup);
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

  it(`runs ${FILES} files each once through the Use queue when svc is killed -9 halfway (doubles at most the events running)`, async () => {
    const up = await slowCounter(cleanup);
    const folder = tmpFolder('kill-queue');
    cleanup.push(() => rmSync(folder, { recursive: true, force: true }));
    const project = makeProject(config(up, folder, '', { use_queue: true, base_delay_ms: 50 }), { 'record.ts': RECORD });
    cleanup.push(() => rmSync(project, { recursive: true, force: true }));
    dropAll(folder);
    const first = await startCli(project);
    await until(() => up.hits('/hit').length >= FILES / 2, 30_000, 'half the runs');
    await first.stop('SIGKILL');
    const atKill = tally(up, folder);
    // The store as the kill left it (read with no server running): the events that were running then.
    const listed = await runCliAsync(['queue', 'list', '--channel', 'file:drop', '--state', 'running', '--json'], project);
    expect(listed.status, listed.stderr).toBe(0);
    const inFlight = (JSON.parse(listed.stdout) as unknown[]).length;
    const second: CliServer = await startCli(project);
    cleanup.push(() => second.stop('SIGTERM'));
    await until(() => tally(up, folder).moved === FILES, 60_000, 'every file moved');
    const t = tally(up, folder);
    console.log(`file pickup, use_queue, ${FILES} files, kill -9 after ${atKill.runs} runs (${atKill.moved} moved, ${inFlight} events running): ${JSON.stringify(t)}`);
    expect(t.misses).toBe(0);
    expect(t.moved).toBe(FILES);
    expect(leftInFolder(folder)).toBe(0);
    expect(t.doubles).toBeLessThanOrEqual(inFlight);
  });
});
