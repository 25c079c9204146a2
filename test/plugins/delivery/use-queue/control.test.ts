import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { control, errorsOf, rows, until } from './support.ts';

/** The operators' control ops: list, show, replay and delete, on the running server. */

const BROKEN = `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => { throw new Error(ctx.input.why ?? 'not yet'); } });
`;
const FIXED = `import { service } from 'svc/sdk';
export default service({ handle: () => ({ done: true }) });
`;

const CONFIG = `
channel_rest:
  - { name: orders, url_path: /orders, service: handler, security: none, use_queue: true, delivery: { max_attempts: 2, base_delay_ms: 5 } }
  - { name: later, url_path: /later, service: handler, security: none, use_queue: true, delivery: { max_attempts: 2, base_delay_ms: 3600000, jitter: false } }
`;

let k: TestKernel;
afterEach(async () => k?.close());

const post = async (path: string, payload: Record<string, unknown> = {}) => (await k.app.inject({ method: 'POST', url: path, payload })).json().cid as string;

interface Listed {
  id: number;
  channel: string | null;
  state: string;
  cid: string;
  attempts: number;
  lastError: { kind: string; message: string } | null;
  errorCount: number;
}

describe('queue control ops', () => {
  it('lists and shows dead events with their errors; replays them after the service was fixed by a hot deploy', async () => {
    k = await startKernel({ config: CONFIG, services: { 'handler.ts': BROKEN } });
    const cid = await post('/orders', { n: 1 });
    await post('/orders', { why: 'upstream said no' });
    await until(k, (r) => r.length === 2 && r.every((x) => x.state === 'dead'));

    const listed = (await control(k, 'queue.list', { channel: 'orders', state: 'dead' })) as Listed[];
    expect(listed.map((e) => [e.channel, e.state, e.attempts, e.errorCount, e.lastError?.message])).toEqual([
      ['orders', 'dead', 2, 2, 'Error: not yet'],
      ['orders', 'dead', 2, 2, 'Error: upstream said no'],
    ]);
    expect(listed[0]!.cid).toBe(cid);
    const shown = (await control(k, 'queue.show', { id: listed[0]!.id })) as { errors: Array<{ attempt: number; cid: string }>; request: { input: unknown; service: string } };
    expect(shown.errors.map((e) => e.attempt)).toEqual([1, 2]);
    expect(shown.request).toMatchObject({ service: 'handler', input: { n: 1 } });
    await expect(control(k, 'queue.show', { id: 999 })).rejects.toThrow('no event 999');

    await k.writeService('handler.ts', FIXED);
    expect(await control(k, 'queue.replay', { error: 'NOT YET', channel: 'orders' })).toEqual({ replayed: 1, ids: [listed[0]!.id] });
    const left = await until(k, (r) => r.length === 1);
    expect(left[0]!.id).toBe(listed[1]!.id);
    // The replayed one was processed; the other stays dead with its history until replayed by id.
    expect(await control(k, 'queue.replay', { id: listed[1]!.id })).toEqual({ replayed: 1, ids: [listed[1]!.id] });
    await until(k, (r) => r.length === 0);
  });

  it("replays a service's dead letters against a chosen version: only while that version serves", async () => {
    const OTHER = `import { service } from 'svc/sdk';\nexport default service({ handle: () => { throw new Error('other fails too'); } });\n`;
    k = await startKernel({ config: `${CONFIG}  - { name: other, url_path: /other, service: other, security: none, use_queue: true, delivery: { max_attempts: 1 } }\n`, services: { 'handler.ts': BROKEN, 'other.ts': OTHER } });
    await post('/orders', { n: 1 });
    await post('/other');
    await until(k, (r) => r.length === 2 && r.every((x) => x.state === 'dead'));
    const history = async () => ((await control(k, 'queue.list', { service: 'handler', state: 'dead' })) as Listed[]).map((e) => e.id);
    const [dead] = await history();
    expect(await history()).toHaveLength(1);
    // Version 1 of handler is the broken one; the fix deployed makes version 2.
    await k.writeService('handler.ts', FIXED);
    const serving = (await control(k, 'services.history', { name: 'handler' })) as { serving: number };
    expect(serving.serving).toBe(2);

    // Against version 1, which no longer serves: refused, nothing replayed, the event stays dead.
    await expect(control(k, 'queue.replay', { all: true, service: 'handler', version: 1 })).rejects.toThrow("version 1 of 'handler' is not serving (version 2 serves): roll back to it first (services.rollback), then replay");
    expect(await history()).toEqual([dead]);
    // Events of two services cannot be pinned to one version.
    await expect(control(k, 'queue.replay', { all: true, version: 2 })).rejects.toThrow('the events chosen are of 2 services (handler, other)');
    // Against the fixed version, which serves: replayed, and it runs there (the event is done).
    expect(await control(k, 'queue.replay', { all: true, service: 'handler', version: 2 })).toEqual({ replayed: 1, ids: [dead], version: 2 });
    await until(k, (r) => r.length === 1);
    expect(((await control(k, 'queue.list', {})) as Listed[]).map((e) => e.channel)).toEqual(['other']);

    // Rolled back to version 1, its source serves again as version 3: a replay against 1 is taken.
    expect(await control(k, 'services.rollback', { name: 'handler', version: 1 })).toMatchObject({ rolled_back_to: 1, version: 3 });
    await post('/orders', { n: 2 });
    const [again] = await until(k, (r) => r.some((x) => x.channel === 'orders' && x.state === 'dead')).then(() => history());
    await expect(control(k, 'queue.replay', { id: again!, version: 2 })).rejects.toThrow("version 2 of 'handler' is not serving (version 3 serves)");
    expect(await control(k, 'queue.replay', { id: again!, version: 1 })).toEqual({ replayed: 1, ids: [again], version: 1 });
  });

  it('replaying keeps the error history and counts attempts afresh', async () => {
    k = await startKernel({ config: CONFIG, services: { 'handler.ts': BROKEN } });
    await post('/orders');
    const [dead] = await until(k, (r) => r[0]?.state === 'dead');
    await control(k, 'queue.replay', { all: true });
    const [again] = await until(k, (r) => r[0]?.state === 'dead' && errorsOf(r[0]).length === 4);
    expect(again!.attempts).toBe(2);
    expect(errorsOf(again!).map((e) => e.attempt)).toEqual([1, 2, 1, 2]);
    expect(again!.id).toBe(dead!.id);
  });

  it('replays a pending event waiting for a long backoff now', async () => {
    k = await startKernel({ config: CONFIG, services: { 'handler.ts': BROKEN } });
    await post('/later');
    const [waiting] = await until(k, (r) => r[0]?.state === 'pending' && r[0].attempts === 1);
    await k.writeService('handler.ts', FIXED);
    expect(await control(k, 'queue.replay', { id: waiting!.id })).toEqual({ replayed: 1, ids: [waiting!.id] });
    await until(k, (r) => r.length === 0);
  });

  it('deletes one event, all dead ones, or those matching an error; a pending one leaves the schedule', async () => {
    k = await startKernel({ config: CONFIG, services: { 'handler.ts': BROKEN } });
    await post('/orders', { why: 'alpha' });
    await post('/orders', { why: 'beta' });
    await post('/orders', { why: 'gamma' });
    await post('/later');
    // The attempt count rises when an attempt starts; its error is written when it ends: wait for both.
    await until(k, (r) => r.filter((x) => x.state === 'dead').length === 3 && r.some((x) => x.channel === 'later' && x.state === 'pending' && errorsOf(x).length === 1));
    const all = await rows(k);
    expect(await control(k, 'queue.delete', { error: 'beta' })).toMatchObject({ deleted: 1 });
    expect(await control(k, 'queue.delete', { id: all[0]!.id })).toEqual({ deleted: 1, ids: [all[0]!.id] });
    expect((await rows(k)).map((r) => errorsOf(r).at(-1)!.message)).toEqual(['Error: gamma', 'Error: not yet']);
    // `all` takes dead events unless told otherwise; the pending one on `later` stays.
    expect(await control(k, 'queue.delete', { all: true })).toMatchObject({ deleted: 1 });
    expect(await control(k, 'queue.delete', { all: true, state: 'pending', channel: 'later' })).toMatchObject({ deleted: 1 });
    expect(await rows(k)).toEqual([]);
    expect(await control(k, 'queue.delete', { all: true })).toEqual({ deleted: 0, ids: [] });
  });

  it('refuses selectors that name no events or more than one kind', async () => {
    k = await startKernel({ config: CONFIG, services: { 'handler.ts': BROKEN } });
    await expect(control(k, 'queue.replay', {})).rejects.toThrow(/name one event/);
    await expect(control(k, 'queue.delete', { id: 1, all: true })).rejects.toThrow(/name one event/);
    await expect(control(k, 'queue.list', { state: 'gone' })).rejects.toThrow();
  });
});
