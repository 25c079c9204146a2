import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import pino from 'pino';
import { ConnectionMeter, definePlugin, systemClock, type KernelApi } from '../../../../sdk/plugin/index.ts';
import { InboundPipeline, inboundDeliverySchema, type InboundChannel } from '../../../../plugins/connectors/shared/inbound.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

/**
 * The pipeline every inbound connector channel runs a message through, against a real kernel,
 * real isolates and the real Use queue: what it tells the broker, and where a message ends.
 */
const SERVICES = {
  'ok.ts': `import { service, t } from 'svc/sdk';\nexport default service({ input: { n: t.integer() }, handle: (ctx) => ({ n: ctx.input.n }) });\n`,
  'flaky.ts': `import { service } from 'svc/sdk';\nexport default service({ handle(ctx) { throw new Error('down at attempt ' + ctx.delivery.attempt); } });\n`,
  'refuses.ts': `import { service, BadRequest } from 'svc/sdk';\nexport default service({ handle() { throw new BadRequest('no such order'); } });\n`,
};

let api!: KernelApi;
const capture = definePlugin({ name: 'capture', kind: 'other', version: '1.0.0', sdk: '^1.8.0', configSchema: z.object({}).strict().default({}), setup: (kernel) => void (api = kernel), hooks: {} });

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: 'channel_rest: []\n', services: SERVICES, extraPlugins: [capture] });
});
afterAll(() => k?.close());

let seq = 0;
function pipeline(service: string, over: Partial<Omit<InboundChannel, 'delivery'>> & { delivery?: Partial<InboundChannel['delivery']> } = {}, stop = new AbortController()) {
  const channel: InboundChannel = {
    source: 'test',
    name: `ch${++seq}`,
    service,
    data_format: 'json',
    deadLetter: 'svc',
    ...over,
    delivery: inboundDeliverySchema.parse({ base_delay_ms: 5, max_delay_ms: 20, ...over.delivery }),
  };
  const meter = new ConnectionMeter(systemClock);
  const p = new InboundPipeline(channel, { kernel: api, meter, log: pino({ level: 'silent' }), stop: stop.signal });
  p.declare();
  return { p, meter, queue: `test:${channel.name}`, stop };
}

const body = (v: unknown) => Buffer.from(JSON.stringify(v));
const list = async (queue: string) => (await k.kernel.runControl('queue.list', { channel: queue, limit: 10 })) as Array<{ id: number; state: string; attempts: number }>;
const show = async (id: number) => (await k.kernel.runControl('queue.show', { id })) as { request: { rawBody?: { text: string } }; errors: Array<{ kind: string; message: string }> };

describe('a message the service takes', () => {
  it('is acked once the service succeeded, and counted', async () => {
    const { p, meter } = pipeline('ok');
    expect(await p.handle({ body: body({ n: 3 }), headers: {} })).toEqual({ action: 'ack', outcome: 'ok' });
    expect(meter.counts.get('consume ok')).toBe(1);
  });

  it('is stored in the Use queue and acked at once with use_queue, then run from there', async () => {
    const { p, queue } = pipeline('ok', { delivery: { use_queue: true } });
    expect(await p.handle({ body: body({ n: 4 }), headers: {} })).toEqual({ action: 'ack', outcome: 'queued' });
    await expect.poll(async () => (await list(queue)).length, { timeout: 10_000 }).toBe(0);
  });
});

describe('a message that cannot succeed', () => {
  it('that is not valid for the data format goes to the dead-letter queue as it came, with the reason', async () => {
    const { p, queue, meter } = pipeline('ok');
    expect(await p.handle({ body: Buffer.from('{"n":'), headers: {} })).toEqual({ action: 'ack', outcome: 'dead_letter' });
    const [dead] = await list(queue);
    expect(dead).toMatchObject({ state: 'dead' });
    const shown = await show(dead!.id);
    expect(shown.errors[0]).toMatchObject({ kind: 'MessageFormatError', message: expect.stringContaining('Invalid JSON') });
    expect(shown.request.rawBody).toEqual({ text: '{"n":' });
    expect(meter.counts.get('consume dead_letter')).toBe(1);
  });

  it('whose service keeps failing is run max_attempts times, then dead-lettered', async () => {
    const { p, queue } = pipeline('flaky', { delivery: { max_attempts: 3 } });
    expect(await p.handle({ body: body({}), headers: {} })).toEqual({ action: 'ack', outcome: 'dead_letter' });
    const [dead] = await list(queue);
    expect(dead).toMatchObject({ state: 'dead', attempts: 3 });
    expect((await show(dead!.id)).errors[0]!.message).toContain('down at attempt 3');
  });

  it('that the service refuses (BadRequest) is dead-lettered after one attempt', async () => {
    const { p, queue } = pipeline('refuses', { delivery: { max_attempts: 5 } });
    expect(await p.handle({ body: body({}), headers: {} })).toEqual({ action: 'ack', outcome: 'dead_letter' });
    expect(await list(queue)).toMatchObject([{ state: 'dead', attempts: 1 }]);
  });

  it('whose input does not match the service model is dead-lettered as BadRequest', async () => {
    const { p, queue } = pipeline('ok');
    expect(await p.handle({ body: body({ n: 'three' }), headers: {} })).toEqual({ action: 'ack', outcome: 'dead_letter' });
    const [dead] = await list(queue);
    expect((await show(dead!.id)).errors[0]!.kind).toBe('BadRequest');
  });

  it("is rejected to the broker's dead-letter handling with dead_letter: broker", async () => {
    const { p, queue } = pipeline('refuses', { deadLetter: 'broker' });
    expect(await p.handle({ body: body({}), headers: {} })).toMatchObject({ action: 'reject', why: expect.stringContaining('no such order') });
    expect(await list(queue)).toEqual([]);
  });
});

describe('shutdown', () => {
  it('between attempts hands the message back unprocessed, not acked', async () => {
    const stop = new AbortController();
    const { p, queue } = pipeline('flaky', { delivery: { max_attempts: 5, base_delay_ms: 60_000, max_delay_ms: 60_000 } }, stop);
    const handled = p.handle({ body: body({}), headers: {} });
    setTimeout(() => stop.abort(), 300);
    const started = Date.now();
    expect(await handled).toEqual({ action: 'requeue', why: 'svc is stopping' });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await list(queue)).toEqual([]);
  });
});

describe('a message the connector decoded itself (payload)', () => {
  it('runs the service with the payload as it is, the data format unused', async () => {
    const { p, meter } = pipeline('ok', { data_format: 'xml' });
    expect(await p.handle({ body: Buffer.from('not xml, not json'), headers: {}, payload: { n: 5 } })).toEqual({ action: 'ack', outcome: 'ok' });
    expect(meter.counts.get('consume ok')).toBe(1);
  });

  it('refused by the connector goes to the dead-letter queue with the reason, its body kept', async () => {
    const { p, queue, meter } = pipeline('ok');
    expect(await p.refuse({ body: Buffer.from('Subject: big'), headers: {}, payload: { n: 6 } }, { kind: 'MessageTooLarge', message: 'too big' })).toEqual({ action: 'ack', outcome: 'dead_letter' });
    const [dead] = await list(queue);
    const shown = await show(dead!.id);
    expect(shown.errors[0]).toMatchObject({ kind: 'MessageTooLarge', message: 'too big' });
    expect(shown.request.rawBody).toEqual({ text: 'Subject: big' });
    expect(meter.counts.get('consume dead_letter')).toBe(1);
  });
});
