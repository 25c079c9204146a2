import { describe, expect, it } from 'vitest';
import { ConfigError, readSource, validate } from '../../../kernel/config/store.ts';
import useQueue from '../../../plugins/delivery/use-queue/plugin.ts';
import scheduler from '../../../plugins/scheduler/plugin.ts';

/** The scheduler_job section as a whole config: each mistake is a config error at its path, never a silent no-op. */

const plugins = [useQueue, scheduler];

function issues(yaml: string): string {
  try {
    validate(readSource(yaml, {}), plugins, {});
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.join('\n');
    throw err;
  }
  throw new Error('the config was accepted');
}

const jobs = (...lines: string[]) => `scheduler_job:\n${lines.map((l) => `  - ${l}`).join('\n')}\n`;

describe('scheduler_job in config', () => {
  it('accepts a job and fills the documented defaults', () => {
    const config = validate(readSource(jobs('{ name: poll, service: poll, every: 5m }'), {}), plugins, {});
    expect(config.scheduler_job).toEqual([
      {
        name: 'poll',
        service: 'poll',
        every: 300_000,
        input: {},
        enabled: true,
        overlap: 'skip',
        missed: 'skip',
        delivery: { max_attempts: 3, base_delay_ms: 1000, max_delay_ms: 60000 },
      },
    ]);
  });

  it.each([
    ['a cron expression that never fires', "{ name: j, service: s, cron: '0 0 30 2 *' }", /scheduler_job\[0\]\.cron: .*never/],
    ['an unknown time zone', "{ name: j, service: s, cron: '0 2 * * *', timezone: Mars/Olympus }", /scheduler_job\[0\]\.timezone: not an IANA time zone/],
    ['an interval under the floor', '{ name: j, service: s, every: 200ms }', /scheduler_job\[0\]\.every: an interval must be at least 1000 ms/],
    ['two kinds of schedule', "{ name: j, service: s, every: 1m, cron: '* * * * *' }", /give one of every, cron or at, not every and cron/],
    ['no schedule', '{ name: j, service: s }', /give one of every, cron or at/],
    ['a date that is not ISO 8601', "{ name: j, service: s, at: 'tomorrow at 9' }", /scheduler_job\[0\]\.at: an ISO 8601 date and time/],
    ['an input that is not an object', '{ name: j, service: s, every: 1m, input: [1, 2] }', /scheduler_job\[0\]\.input/],
    ['an unknown key', '{ name: j, service: s, every: 1m, evry: 1m }', /scheduler_job\[0\].*evry/],
  ])('refuses %s', (_what, job, message) => {
    expect(issues(jobs(job))).toMatch(message);
  });

  it('refuses two jobs of one name, naming both', () => {
    expect(issues(jobs('{ name: j, service: s, every: 1m }', '{ name: j, service: t, every: 2m }'))).toMatch(/scheduler_job\[1\]\.name: duplicate job name 'j' \(also scheduler_job\[0\]\)/);
  });

  it('lowers the interval floor with the plugin option', () => {
    const yaml = `plugins:\n  scheduler: { config: { min_interval_ms: 100 } }\n${jobs('{ name: j, service: s, every: 200ms }')}`;
    expect(validate(readSource(yaml, {}), plugins, {}).scheduler_job![0]!.every).toBe(200);
  });

  it('refuses jobs when the Use queue is off: every run goes through it', () => {
    expect(issues(`plugins:\n  use-queue: false\n${jobs('{ name: j, service: s, every: 1m }')}`)).toMatch(/scheduler_job: scheduled jobs run through the Use queue: turn plugins.use-queue on/);
  });
});
