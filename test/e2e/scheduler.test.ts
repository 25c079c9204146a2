import { afterEach, describe, expect, it } from 'vitest';
import { makeProject, runCliAsync, startCli, type CliServer } from '../helpers/cli.ts';
import { waitFor } from '../helpers/wait.ts';

/**
 * The scheduler on real time, through the CLI a user types: a job every second runs on its own,
 * `svc job list|show|pause|resume|run` act on the running server, and list and show still answer
 * from the store once it stopped.
 */

const CONFIG = `
server:
  port: 0
scheduler_job:
  - { name: every-second, service: stamp, every: 1s }
  - { name: nightly, service: stamp, cron: '30 2 * * *', timezone: Europe/Berlin, input: { tag: night } }
`;
const STAMP = `import { service, t } from 'svc/sdk';
export default service({ input: { tag: t.string({ default: 'tick' }) }, handle: (ctx) => { ctx.log.info('stamp ' + ctx.input.tag + ' ' + ctx.delivery.source.at); return {}; } });
`;

let server: CliServer | undefined;
afterEach(async () => {
  if (server?.proc.exitCode === null) await server.stop();
  server = undefined;
});

async function svc(dir: string, ...args: string[]): Promise<string> {
  const r = await runCliAsync([...args, '--config', 'config/svc.yaml'], dir);
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

interface Shown {
  paused: boolean;
  nextRuns: string[];
  history: Array<{ tick: string; state: string; cause: string; cid: string }>;
}

describe('svc job (real time, over the CLI)', () => {
  it('runs a one-second job on its own; pause, resume and run act at once; list and show answer without a server', async () => {
    const dir = makeProject(CONFIG, { 'stamp.ts': STAMP });
    server = await startCli(dir);
    const show = async (name: string) => JSON.parse(await svc(dir, 'job', 'show', name, '--json')) as Shown;

    const stamps = () => server!.output().match(/stamp tick \S+/g) ?? [];
    await waitFor('three runs of every-second', () => stamps().length >= 3, 30_000);
    const ran = (await show('every-second')).history.filter((r) => r.state === 'succeeded');
    // Whole seconds, one run each, the service's log line carrying the tick.
    const ticks = ran.map((r) => Date.parse(r.tick));
    expect(ticks.every((t) => t % 1000 === 0)).toBe(true);
    expect(new Set(ticks).size).toBe(ticks.length);
    // The store may record a run before its log line has crossed the server's stdout pipe, so
    // the newest run's line is waited for, not expected already there.
    const newest = `stamp tick ${ran[0]!.tick}`;
    await waitFor('the newest run\'s log line', () => server!.output().includes(newest), 10_000);

    // The newest run is the one that finished, or a tick taken since while the command started
    // (a one-second job: queued, or skipped as the run before it still went); never a failure.
    expect(await svc(dir, 'job', 'list')).toMatch(/every-second {2}stamp {2}every 1s \(UTC\) {2}active {2}next \S+ {2}last (succeeded|queued|waiting|skipped) \S+/);
    expect(await svc(dir, 'job', 'pause', 'every-second')).toContain('every-second: paused');
    const pausedAt = (await show('every-second')).history.length;
    await new Promise((r) => setTimeout(r, 2_500));
    const paused = await show('every-second');
    expect(paused.paused).toBe(true);
    expect(paused.nextRuns).toEqual([]);
    // A tick taken as the pause landed may still show up; no more after it.
    expect(paused.history.length).toBeLessThanOrEqual(pausedAt + 1);
    const before = stamps().length;
    await svc(dir, 'job', 'resume', 'every-second');
    await waitFor('a run after resume', () => stamps().length > before, 30_000).catch(async (err: unknown) => {
      // Say what the job looked like, and what the server said, when it did not run again.
      const h = (await show('every-second')).history.slice(0, 5);
      throw new Error(`${(err as Error).message}\nhistory: ${JSON.stringify(h)}\nserver: ${server!.output().slice(-3000)}`);
    });

    // The nightly job, run now by hand, with its input.
    expect(await svc(dir, 'job', 'run', 'nightly')).toMatch(/nightly: run queued \(tick \S+, cid \w+\)/);
    await waitFor('the manual run', () => server!.output().includes('stamp night'));

    // Refusals are plain: an unknown job, a missing name.
    const unknown = await runCliAsync(['job', 'run', 'nope', '--config', 'config/svc.yaml'], dir);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(/No job named 'nope'/);
    expect((await runCliAsync(['job', 'show', '--config', 'config/svc.yaml'], dir)).status).toBe(2);

    await server.stop();
    // Without a server: read from the store.
    const list = await svc(dir, 'job', 'list');
    expect(list).toContain('nightly  stamp  cron 30 2 * * * (Europe/Berlin)  active');
    expect((await show('every-second')).history.length).toBeGreaterThan(3);
    const offline = await runCliAsync(['job', 'run', 'nightly', '--config', 'config/svc.yaml'], dir);
    expect(offline.status).toBe(1);
    expect(offline.stderr).toMatch(/no server is running/);
  }, 180_000);
});
