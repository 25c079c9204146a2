import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobControls } from '../../../plugins/scheduler/control.ts';
import type { JobScheduler } from '../../../plugins/scheduler/runtime.ts';
import { jobSchema, type Job } from '../../../plugins/scheduler/schema.ts';
import { SchedulerTables } from '../../../plugins/scheduler/store.ts';
import type { ControlOp, DataStore } from '../../../sdk/plugin/index.ts';
import { openTestStore } from '../../helpers/store.ts';

/**
 * The job ops for a tenant's administrator (`caller`): its tenant's jobs only, another's not
 * found. Jobs of tenants are parsed from plain ones and renamed, as the tenant config loading
 * qualifies them; the tables are a real store.
 */

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const job = (name: string): Job => ({ ...jobSchema.parse({ name: 'x', service: 'svc', cron: '0 3 * * *' }), name });
const JOBS = [job('acme/nightly'), job('beta/nightly'), job('platform-job')];

let store: DataStore;
let ops: Map<string, ControlOp>;
beforeAll(async () => {
  store = await openTestStore();
  const tables = await SchedulerTables.open(store);
  for (const j of JOBS) await tables.register(j.name, 'f', T0 + 60_000, T0);
  // Only run and resume reach the runtime; the ops below never do for another tenant's job.
  const runtime = { runNow: () => Promise.reject(new Error('not in this test')), replan: () => Promise.resolve() } as unknown as JobScheduler;
  ops = new Map(jobControls({ jobs: () => JOBS, serverZone: () => 'UTC', now: () => T0, tables, runtime }).map((o) => [o.op, o]));
});
afterAll(() => store?.close());

/** As the admin API runs an op: its arguments parsed, then the handler with the caller. */
const run = (op: string, args: unknown, tenant?: string) => ops.get(op)!.handler(ops.get(op)!.args.parse(args), tenant === undefined ? undefined : { tenant });

describe('job ops limited to a tenant', () => {
  it('every job op declares it can be limited to a tenant', () => {
    expect([...ops.values()].filter((o) => o.tenantScoped).map((o) => o.op).sort()).toEqual(['job.list', 'job.pause', 'job.resume', 'job.run', 'job.show']);
  });

  it("lists the caller's tenant's jobs, and every job for the platform", async () => {
    expect(((await run('job.list', {}, 'acme')) as Array<{ name: string }>).map((j) => j.name)).toEqual(['acme/nightly']);
    expect(((await run('job.list', {})) as Array<{ name: string }>).map((j) => j.name)).toEqual(['acme/nightly', 'beta/nightly', 'platform-job']);
  });

  it("answers another tenant's job, and the platform's, as not found", async () => {
    for (const name of ['beta/nightly', 'platform-job']) {
      for (const op of ['job.show', 'job.run', 'job.pause', 'job.resume']) await expect(run(op, { name }, 'acme'), `${op} ${name}`).rejects.toMatchObject({ code: 'NOT_FOUND' });
    }
    expect(((await run('job.show', { name: 'beta/nightly' })) as { paused: boolean }).paused).toBe(false);
  });

  it("pauses and resumes the caller's own job", async () => {
    expect(await run('job.pause', { name: 'acme/nightly' }, 'acme')).toEqual({ name: 'acme/nightly', paused: true });
    expect(((await run('job.show', { name: 'acme/nightly' }, 'acme')) as { paused: boolean }).paused).toBe(true);
    expect(await run('job.resume', { name: 'acme/nightly' }, 'acme')).toEqual({ name: 'acme/nightly', paused: false });
  });
});
