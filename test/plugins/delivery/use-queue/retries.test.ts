import { afterEach, describe, expect, it } from 'vitest';
import { createUseQueuePlugin } from '../../../../plugins/delivery/use-queue/plugin.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { errorsOf, rows, thrown, until } from './support.ts';

/**
 * Retries with their backoff, the dead-letter queue, permanent failures. The plugin is built with
 * a fixed random (0.5: half of each ceiling), so the delays are known; the bundled one is off.
 */

const FAIL = `import { service, Unauthorized, ServiceUnavailable } from 'svc/sdk';
export default service({ handle: (ctx) => {
  const started = Date.now();
  if (ctx.input.mode === 'unauthorized') throw new Unauthorized('bad signature');
  if (ctx.input.mode === 'unavailable') throw new ServiceUnavailable('try later');
  if (ctx.input.mode === 'status500') { ctx.response.status = 500; return { started }; }
  if (ctx.input.mode === 'status422') { ctx.response.status = 422; return { started }; }
  if (ctx.input.mode === 'ok') return { ok: true };
  if (ctx.input.mode === 'spin') { while (true) {} }
  throw new Error(JSON.stringify({ started, attempt: ctx.delivery.attempt }));
} });
`;

const config = (delivery: string) => `
plugins:
  use-queue: false
channel_rest:
  - { name: hook, url_path: /hook, service: fail, security: none, use_queue: true, delivery: ${delivery} }
`;

let k: TestKernel;
afterEach(async () => k?.close());

const logs: Array<Record<string, unknown>> = [];
async function start(delivery: string, random = () => 0.5): Promise<void> {
  logs.length = 0;
  k = await startKernel({ config: config(delivery), services: { 'fail.ts': FAIL }, extraPlugins: [createUseQueuePlugin({ random })], logs });
}
const post = (input: Record<string, unknown>) => k.app.inject({ method: 'POST', url: '/hook', payload: input });

describe('retries', () => {
  it('retries a throwing service with full-jitter backoff, then dead-letters it with every attempt\'s error and CID', async () => {
    await start('{ max_attempts: 4, base_delay_ms: 100, max_delay_ms: 250, jitter: true }');
    const cid = (await post({ mode: 'throw' })).json().cid as string;
    const [dead] = await until(k, (r) => r[0]?.state === 'dead');
    expect(dead).toMatchObject({ cid, attempts: 4 });
    // Ceilings 100, 200, min(400, 250) = 250; the random 0.5 halves each.
    const scheduled = logs.filter((l) => l.msg === 'queue: attempt failed, retry scheduled');
    expect(scheduled.map((l) => l.retryInMs)).toEqual([50, 100, 125]);
    const errors = errorsOf(dead!);
    expect(errors.map((e) => [e.attempt, e.kind])).toEqual([
      [1, 'Error'],
      [2, 'Error'],
      [3, 'Error'],
      [4, 'Error'],
    ]);
    expect(new Set(errors.map((e) => e.cid)).size).toBe(4);
    expect(errors.map((e) => e.cid)).not.toContain(cid);
    // Each retry started no earlier than its delay after the failure before it.
    for (const [i, delay] of [50, 100, 125].entries()) {
      const next = thrown<{ started: number; attempt: number }>(errors[i + 1]!);
      expect(next.attempt).toBe(i + 2);
      expect(next.started - Date.parse(errors[i]!.at)).toBeGreaterThanOrEqual(delay - 2);
      expect(next.started - Date.parse(errors[i]!.at)).toBeLessThan(delay + 1000);
    }
    expect(logs.filter((l) => l.msg === 'queue: event moved to the dead-letter queue')).toHaveLength(1);
  });

  it('without jitter waits each full ceiling', async () => {
    await start('{ max_attempts: 3, base_delay_ms: 40, jitter: false }', () => 0);
    await post({ mode: 'throw' });
    await until(k, (r) => r[0]?.state === 'dead');
    expect(logs.filter((l) => l.msg === 'queue: attempt failed, retry scheduled').map((l) => l.retryInMs)).toEqual([40, 80]);
  });

  it('retries ServiceUnavailable and a 5xx status the service set', async () => {
    await start('{ max_attempts: 2, base_delay_ms: 10 }');
    await post({ mode: 'unavailable' });
    await post({ mode: 'status500' });
    const dead = await until(k, (r) => r.length === 2 && r.every((x) => x.state === 'dead'));
    expect(dead.map((r) => errorsOf(r).map((e) => e.kind))).toEqual([
      ['ServiceUnavailable', 'ServiceUnavailable'],
      ['Status 500', 'Status 500'],
    ]);
    expect(errorsOf(dead[0]!)[0]!.message).toBe('try later');
  });

  it('moves permanent failures to the dead-letter queue at once: a refused signature is never retried', async () => {
    await start('{ max_attempts: 5, base_delay_ms: 10 }');
    await post({ mode: 'unauthorized' });
    await post({ mode: 'status422' });
    const dead = await until(k, (r) => r.length === 2 && r.every((x) => x.state === 'dead'));
    expect(dead.map((r) => r.attempts)).toEqual([1, 1]);
    expect(dead.map((r) => errorsOf(r).map((e) => `${e.kind}: ${e.message}`))).toEqual([['Unauthorized: bad signature'], ['Status 422: the service answered with a client error status']]);
  });

  it('deletes a processed event', async () => {
    await start('{ max_attempts: 5 }');
    expect((await post({ mode: 'ok' })).statusCode).toBe(200);
    await until(k, (r) => r.length === 0);
    expect(logs.filter((l) => l.msg === 'queue: event processed')).toHaveLength(1);
  });

  it('a retry waiting for its delay does not hold back later events of the channel', async () => {
    await start('{ max_attempts: 2, base_delay_ms: 60000, jitter: false, concurrency: 1 }');
    const failing = await post({ mode: 'throw' });
    expect(failing.statusCode).toBe(200);
    await until(k, (r) => r[0]?.attempts === 1 && r[0].state === 'pending');
    const later = await post({ mode: 'ok' });
    expect(later.statusCode).toBe(200);
    // One row is left whether or not the later event ran: it must be seen to be processed.
    await waitFor('the later event to be processed', () => logs.some((l) => l.msg === 'queue: event processed' && l.original === later.json().cid), 10_000);
    const left = await rows(k);
    expect(left).toHaveLength(1);
    expect(left[0]).toMatchObject({ cid: failing.json().cid, state: 'pending', attempts: 1 });
    expect(left[0]!.next_attempt_at - Date.parse(errorsOf(left[0]!)[0]!.at)).toBe(60000);
  });
});

describe('retries of sandbox limits', () => {
  it('a service past its time limit is retried like a throw', async () => {
    logs.length = 0;
    k = await startKernel({
      config: `
server: { sandbox: { workers: 1, timeout_ms: 200 } }
plugins:
  use-queue: false
channel_rest:
  - { name: hook, url_path: /hook, service: fail, security: none, use_queue: true, delivery: { max_attempts: 2, base_delay_ms: 10 } }
`,
      services: { 'fail.ts': FAIL },
      extraPlugins: [createUseQueuePlugin({ random: () => 0.5 })],
      logs,
    });
    await post({ mode: 'spin' });
    const [dead] = await until(k, (r) => r[0]?.state === 'dead', 20_000);
    expect(errorsOf(dead!).map((e) => e.kind)).toEqual(['SERVICE_TIMEOUT', 'SERVICE_TIMEOUT']);
  });
});
