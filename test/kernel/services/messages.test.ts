import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConnectionMeter, definePlugin, MessageFormatError, SvcError, type ConnectionReport, type KernelApi } from '../../../sdk/plugin/index.ts';
import { systemClock } from '../../../kernel/platform/clock.ts';
import { parseExposition, sampleValue, startObserved, type ObservedKernel } from '../../plugins/observe/support.ts';

/**
 * What connectors build on (SDK 1.8): message decoders of the format plugins, an event with a
 * payload, headers and raw bytes run through the event path, dead letters stored straight by a
 * source, and connection reports in /ready and /metrics.
 */
const ECHO = `import { service, t } from 'svc/sdk';
export default service({
  input: { id: t.integer({ optional: true }), name: t.string({ optional: true }) },
  handle: (ctx) => ({ input: ctx.input, payload: ctx.payload, headers: ctx.headers, raw: ctx.rawBody, source: ctx.delivery?.source }),
});
`;

const TOO_LARGE = `import { service, PayloadTooLarge } from 'svc/sdk';
export default service({ handle() { throw new PayloadTooLarge('order too long'); } });
`;

let api!: KernelApi;
const reports: ConnectionReport[] = [];
const meter = new ConnectionMeter(systemClock);
const probe = definePlugin({
  name: 'probe',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.8.0',
  configSchema: z.object({}).strict().default({}),
  setup(kernel) {
    api = kernel;
    kernel.addConnections(() => reports);
  },
  hooks: {},
});

let k: ObservedKernel;
beforeAll(async () => {
  k = await startObserved({ config: 'channel_rest: []\n', services: { 'echo.ts': ECHO, 'too-large.ts': TOO_LARGE }, extraPlugins: [probe] });
});
afterAll(() => k?.close());

describe('message decoders', () => {
  it('decode JSON, XML, form, HL7 and raw bytes with each format plugin', () => {
    expect(api.decodeMessage('json', Buffer.from('{"id":7}'))).toEqual({ payload: { id: 7 } });
    expect(api.decodeMessage('xml', Buffer.from('<order><id>7</id><line>a</line></order>'), { always_array: ['line'] })).toEqual({ payload: { '#root': 'order', id: '7', line: ['a'] }, textFields: true });
    expect(api.decodeMessage('form', Buffer.from('id=7&name=a+b'))).toEqual({ payload: { id: '7', name: 'a b' }, textFields: true });
    const hl7 = api.decodeMessage('hl7', Buffer.from('MSH|^~\\&|A|B|C|D|20250101||ADT^A01|1|P|2.5\rPID|1||123||Doe^John\r'));
    expect(hl7.raw).toBe(true);
    expect((hl7.payload as Record<string, unknown>)['PID.5.1']).toBe('Doe');
    expect(api.decodeMessage('none', Buffer.from([0xff, 0]))).toEqual({ raw: true });
  });

  it('refuse a message that is not of the format with MessageFormatError, and an unknown format with INTERNAL', () => {
    expect(() => api.decodeMessage('json', Buffer.from('{"id":'))).toThrow(MessageFormatError);
    expect(() => api.decodeMessage('json', Buffer.from('[[[1]]]'), { max_depth: 2 })).toThrow(/nest|deep/i);
    expect(() => api.decodeMessage('xml', Buffer.from('<a>'))).toThrow(MessageFormatError);
    expect(() => api.decodeMessage('form', Buffer.from([0xff]))).toThrow(MessageFormatError);
    expect(() => api.decodeMessage('hl7', Buffer.from('not hl7'))).toThrow(MessageFormatError);
    expect(() => api.decodeMessage('yaml', Buffer.from('a: b'))).toThrow(SvcError);
  });
});

describe('an event with a payload', () => {
  it('reaches the service as payload, input fields (text converted to the model), headers and raw body', async () => {
    const decoded = api.decodeMessage('xml', Buffer.from('<m><id>41</id><name>x</name></m>'));
    const request = api.eventRequest({ source: 'probe', name: 'q1', service: 'echo', payload: decoded.payload, textFields: decoded.textFields, headers: { 'content-type': 'application/xml' } });
    const outcome = await api.runEvent(request);
    expect(outcome).toMatchObject({ ok: true, body: { input: { id: 41, name: 'x' }, payload: { '#root': 'm', id: '41' }, headers: { 'content-type': 'application/xml' }, source: { kind: 'probe', name: 'q1' } } });
  });

  it('is refused (permanent) when its text does not convert to the model', async () => {
    const outcome = await api.runEvent(api.eventRequest({ source: 'probe', name: 'q1', service: 'echo', payload: { id: 'seven' }, textFields: true }));
    expect(outcome).toMatchObject({ ok: false, permanent: true, kind: 'BadRequest' });
  });

  it('is refused for good (not retried) when the service raises PayloadTooLarge', async () => {
    const outcome = await api.runEvent(api.eventRequest({ source: 'probe', name: 'q1', service: 'too-large', payload: { id: 1 } }));
    expect(outcome).toMatchObject({ ok: false, permanent: true, kind: 'PayloadTooLarge', message: 'order too long' });
  });

  it('gives the service the bytes as rawBody (text when UTF-8)', async () => {
    const outcome = await api.runEvent(api.eventRequest({ source: 'probe', name: 'q1', service: 'echo', rawBody: Buffer.from('plain text') }));
    expect(outcome).toMatchObject({ ok: true, body: { raw: 'plain text', input: {} } });
  });
});

describe('a dead letter stored by a source', () => {
  it('is in the dead-letter queue with its reason, and can be replayed', async () => {
    const durable = api.lookup('events.durable')!;
    durable.declareQueue('probe:q1', { max_attempts: 1 });
    const { id, cid } = await durable.deadLetter('probe:q1', { source: 'probe', name: 'q1', service: 'echo', payload: { id: 5 } }, { kind: 'MessageFormatError', message: 'Invalid JSON', attempts: 1 });
    const shown = (await k.kernel.runControl('queue.show', { id })) as { state: string; cid: string; errors: Array<{ kind: string; message: string }> };
    expect(shown).toMatchObject({ state: 'dead', cid, errors: [{ kind: 'MessageFormatError', message: 'Invalid JSON' }] });
    await k.kernel.runControl('queue.replay', { id });
    await expect.poll(async () => ((await k.kernel.runControl('queue.list', { channel: 'probe:q1', limit: 10 })) as unknown[]).length, { timeout: 10_000 }).toBe(0);
  });
});

describe('connection reports', () => {
  it('show in /ready, and a down connection with ready_check makes it 503', async () => {
    reports.length = 0;
    reports.push({ kind: 'sql', name: 'crm', role: 'connection', state: 'up', readyCheck: true, meter });
    let res = await fetch(`${k.admin}/ready`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ checks: expect.arrayContaining([{ name: 'connections', ok: true }]), connections: [{ kind: 'sql', name: 'crm', state: 'up', ready_check: true }] });
    reports.push({ kind: 'amqp', name: 'orders', role: 'channel', state: 'down', reason: 'connection refused', readyCheck: false, meter });
    expect((await fetch(`${k.admin}/ready`)).status).toBe(200);
    reports[0] = { ...reports[0]!, state: 'connecting', reason: 'reconnecting' };
    res = await fetch(`${k.admin}/ready`);
    expect(res.status).toBe(503);
    expect((await res.json()).details).toContain('sql crm connecting');
  });

  it('show in /metrics: up, operations by outcome, latency, pool', async () => {
    reports.length = 0;
    const started = meter.start();
    meter.done('query', 'ok', started);
    meter.done('query', 'error');
    reports.push({ kind: 'sql', name: 'crm', role: 'connection', state: 'up', readyCheck: false, meter, pool: { size: 4, busy: 1, idle: 3, waiting: 0 } });
    const res = await fetch(`${k.admin}/metrics`, { headers: { authorization: `Basic ${Buffer.from('admin:admin-test-password').toString('base64')}` } });
    const samples = parseExposition(await res.text());
    expect(sampleValue(samples, 'svc_connector_up', { kind: 'sql', connection: 'crm' })).toBe(1);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'sql', connection: 'crm', operation: 'query', outcome: 'ok' })).toBe(1);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'sql', connection: 'crm', operation: 'query', outcome: 'error' })).toBe(1);
    expect(sampleValue(samples, 'svc_connector_operation_duration_seconds_count', { kind: 'sql', connection: 'crm' })).toBe(1);
    expect(sampleValue(samples, 'svc_connector_pool_connections', { kind: 'sql', connection: 'crm', state: 'idle' })).toBe(3);
  });
});
