import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { json, Upstream } from '../../outgoing/rest/upstream.ts';
import { until } from '../../delivery/use-queue/support.ts';
import { Collector, type ExportedSpan } from './collector.ts';

/**
 * Spans exported over OTLP/HTTP to a local collector stand-in: a caller's traceparent → the
 * channel's server span (its child) → the outgoing call's client span (the server span's child),
 * whose id the upstream receives in its traceparent; a queued event's run in the accepting
 * request's trace; new traces for requests without a (valid) traceparent.
 */
const upstream = new Upstream();
const collector = new Collector();
const logs: Array<Record<string, unknown>> = [];
let k: TestKernel;

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

const CALLER = `import { service, outgoing } from 'svc/sdk';
export default service({ async handle(ctx) { ctx.log.info('calling up'); const res = await outgoing('up').get(ctx.cid, { params: { key: 'secret-key' } }); return { status: res.status }; } });
`;
const FRONT = `import { service, invokeAsync } from 'svc/sdk';
export default service({ handle: async () => ({ queued: await invokeAsync('caller', {}) }) });
`;
const FAILING = `import { service } from 'svc/sdk';
export default service({ handle() { throw new Error('boom'); } });
`;

const config = () => `
plugins:
  tracing: { config: { endpoint: "${collector.url}", service_name: svc-test, batch_delay_ms: 20, headers: { x-collector-key: "k-123" } } }
  use-queue: { config: { stop_wait_ms: 0 } }
channel_rest:
  - { name: caller, url_path: "/call/{id}", service: caller, security: none }
  - { name: failing, url_path: /failing, service: failing, security: none }
  - { name: front, url_path: /front, service: front, security: none }
  - { name: queued, url_path: /queued, service: caller, security: none, method: POST, use_queue: true }
outgoing_rest:
  - { name: up, address: "http://127.0.0.1:${upstream.port}", url_path: /echo }
`;

function traceparentOf(s: ExportedSpan): string {
  return `00-${s.traceId}-${s.spanId}-01`;
}

const inTrace = (traceId: string, kind: number) => (spans: ExportedSpan[]) => spans.filter((s) => s.traceId === traceId && s.kind === kind);

beforeAll(async () => {
  await collector.start();
  await upstream.route('/echo', (_req, res) => json(res, 200, { ok: true })).start();
  k = await startKernel({ config: config(), services: { 'caller.ts': CALLER, 'failing.ts': FAILING, 'front.ts': FRONT }, logs });
}, 30_000);

afterAll(async () => {
  await k?.close();
  await upstream.close();
  await collector.close();
});

beforeEach(() => upstream.reset());

describe('OpenTelemetry export (OTLP/HTTP JSON)', () => {
  it("makes the server span a child of the caller's span and the outgoing call's span a child of the server span", async () => {
    const res = await k.app.inject({ method: 'GET', url: '/call/7?x=1', headers: { traceparent: `00-${TRACE}-${CALLER_SPAN}-01`, tracestate: 'rojo=00f067aa0ba902b7, congo=t61rcWkgMzE', 'user-agent': 'tests/1' } });
    expect(res.statusCode).toBe(200);
    const cid = res.headers['x-svc-cid'] as string;

    const [server] = await collector.waitFor(inTrace(TRACE, SERVER));
    const [client] = await collector.waitFor(inTrace(TRACE, CLIENT));
    expect(server).toMatchObject({
      parentSpanId: CALLER_SPAN,
      name: 'GET /call/{id}',
      service: 'svc-test',
      attributes: {
        'http.request.method': 'GET',
        'http.route': '/call/{id}',
        'url.path': '/call/7',
        'http.response.status_code': 200,
        'user_agent.original': 'tests/1',
        'svc.channel': 'caller',
        'svc.service': 'caller',
        'svc.cid': cid,
      },
    });
    expect(server!.spanId).not.toBe(CALLER_SPAN);
    expect(client).toMatchObject({
      parentSpanId: server!.spanId,
      name: 'GET /echo',
      attributes: { 'http.request.method': 'GET', 'server.address': '127.0.0.1', 'server.port': upstream.port, 'url.template': '/echo', 'svc.connection': 'up', 'http.response.status_code': 200 },
    });
    // The query string (here an API key) stays out of the span.
    expect(client!.attributes['url.full']).toBe(`http://127.0.0.1:${upstream.port}/echo`);

    // The upstream got the client span as its parent, and the caller's tracestate unchanged.
    const [seen] = upstream.hits('/echo');
    expect(seen!.headers.traceparent).toBe(traceparentOf(client!));
    expect(seen!.headers.tracestate).toBe('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
    // The client learns its request's span; the collector got the configured headers.
    expect(res.headers.traceresponse).toBe(traceparentOf(server!));
    expect(collector.requests.at(-1)).toMatchObject({ url: '/v1/traces', headers: { 'x-collector-key': 'k-123', 'content-type': 'application/json' } });
    // The request's log lines carry the trace next to the CID.
    expect(logs.find((l) => l.msg === 'calling up' && l.cid === cid)).toMatchObject({ trace_id: TRACE, span_id: server!.spanId });
  });

  it('starts a new trace for a request without a traceparent, and propagates it', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/call/1' });
    const [, traceId, spanId] = (res.headers.traceresponse as string).split('-');
    const [server] = await collector.waitFor(inTrace(traceId!, SERVER));
    expect(server).toMatchObject({ spanId, parentSpanId: undefined });
    const [client] = await collector.waitFor(inTrace(traceId!, CLIENT));
    expect(client!.parentSpanId).toBe(spanId);
    expect(upstream.hits('/echo')[0]!.headers.traceparent).toBe(traceparentOf(client!));
    expect(upstream.hits('/echo')[0]!.headers.tracestate).toBeUndefined();
  });

  it.each([
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${CALLER_SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${CALLER_SPAN}-01`],
    ['version ff', `ff-${TRACE}-${CALLER_SPAN}-01`],
    ['a truncated value', `00-${TRACE}-${CALLER_SPAN}`],
    ['garbage', 'not a trace'],
  ])('treats a traceparent with %s as absent: a new trace, no error, no tracestate passed on', async (_why, traceparent) => {
    const res = await k.app.inject({ method: 'GET', url: '/call/2', headers: { traceparent, tracestate: 'rojo=1' } });
    expect(res.statusCode).toBe(200);
    const [, traceId, spanId] = (res.headers.traceresponse as string).split('-');
    expect(traceId).not.toBe(TRACE);
    expect(traceId).not.toBe('0'.repeat(32));
    const [server] = await collector.waitFor(inTrace(traceId!, SERVER));
    expect(server).toMatchObject({ spanId, parentSpanId: undefined });
    const sent = upstream.hits('/echo')[0]!.headers;
    expect(sent.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(sent.tracestate).toBeUndefined();
  });

  it("follows the caller's sampled flag: not sampled, nothing is exported but the trace id still travels", async () => {
    const trace = 'a'.repeat(32);
    await k.app.inject({ method: 'GET', url: '/call/3', headers: { traceparent: `00-${trace}-${CALLER_SPAN}-00` } });
    const sent = upstream.hits('/echo')[0]!.headers.traceparent as string;
    expect(sent).toMatch(new RegExp(`^00-${trace}-[0-9a-f]{16}-00$`));
    expect(sent).not.toContain(CALLER_SPAN);
    // A later sampled request's spans arrive; the unsampled one's never do.
    const res = await k.app.inject({ method: 'GET', url: '/call/4' });
    await collector.waitFor(inTrace((res.headers.traceresponse as string).split('-')[1]!, SERVER));
    expect(collector.spans.filter((s) => s.traceId === trace)).toEqual([]);
  });

  it('marks a 5xx server span as an error', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/failing', headers: { traceparent: `00-${'b'.repeat(32)}-${CALLER_SPAN}-01` } });
    expect(res.statusCode).toBe(500);
    expect(res.headers.traceresponse).toMatch(/^00-b{32}-/);
    const [server] = await collector.waitFor(inTrace('b'.repeat(32), SERVER));
    expect(server).toMatchObject({ attributes: { 'http.response.status_code': 500, 'error.type': '500' }, status: { code: 2 } });
  });

  it("runs a queued event in the accepting request's trace: run span child of its server span, outgoing calls children of the run", async () => {
    const trace = 'c'.repeat(32);
    const res = await k.app.inject({ method: 'POST', url: '/queued', payload: { id: 1 }, headers: { traceparent: `00-${trace}-${CALLER_SPAN}-01`, tracestate: 'rojo=1' } });
    expect(res.statusCode).toBe(200);
    const eventCid = res.json().cid as string;
    await until(k, (rows) => rows.length === 0);
    const [server] = await collector.waitFor(inTrace(trace, SERVER));
    const [run] = await collector.waitFor(inTrace(trace, CONSUMER));
    const [client] = await collector.waitFor(inTrace(trace, CLIENT));
    expect(server!.parentSpanId).toBe(CALLER_SPAN);
    expect(run).toMatchObject({
      parentSpanId: server!.spanId,
      name: 'process queued',
      attributes: { 'messaging.operation.type': 'process', 'messaging.destination.name': 'queued', 'svc.service': 'caller', 'svc.channel': 'queued', 'svc.queue.event_cid': eventCid, 'svc.queue.attempt': 1 },
    });
    expect(run!.attributes['svc.cid']).not.toBe(eventCid);
    expect(client!.parentSpanId).toBe(run!.spanId);
    const [seen] = upstream.hits('/echo');
    expect(seen!.headers.traceparent).toBe(traceparentOf(client!));
    expect(seen!.headers.tracestate).toBe('rojo=1');
  });
});

describe('background work (invokeAsync)', () => {
  it("runs in the calling request's trace, as a child of its server span", async () => {
    const trace = 'd'.repeat(32);
    const res = await k.app.inject({ method: 'POST', url: '/front', payload: {}, headers: { traceparent: `00-${trace}-${CALLER_SPAN}-01` } });
    expect(res.statusCode).toBe(200);
    const [server] = await collector.waitFor(inTrace(trace, SERVER));
    const [run] = await collector.waitFor(inTrace(trace, CONSUMER));
    const [client] = await collector.waitFor(inTrace(trace, CLIENT));
    expect(run).toMatchObject({ parentSpanId: server!.spanId, name: 'process background', attributes: { 'svc.service': 'caller', 'svc.queue.event_cid': res.json().queued } });
    expect(run!.attributes).not.toHaveProperty('svc.channel');
    expect(client!.parentSpanId).toBe(run!.spanId);
  });
});

describe('a collector that refuses exports', () => {
  it('fails no request and is reported once in the log, without the headers, then its recovery once', async () => {
    const before = logs.length;
    // 400 is not retried by the exporter (a 503 is, for seconds), so the failure shows at once.
    collector.status = 400;
    try {
      for (let i = 0; i < 3; i++) expect((await k.app.inject({ method: 'GET', url: '/failing' })).statusCode).toBe(500);
      const deadline = Date.now() + 10_000;
      const warnings = () => logs.slice(before).filter((l) => String(l.msg).startsWith('tracing: spans could not be exported'));
      while (warnings().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 200));
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]).toMatchObject({ endpoint: `${collector.url}/v1/traces` });
      expect(JSON.stringify(logs.slice(before))).not.toContain('k-123');
    } finally {
      collector.status = 200;
    }
    await k.app.inject({ method: 'GET', url: '/failing' });
    const deadline = Date.now() + 10_000;
    while (!logs.slice(before).some((l) => l.msg === 'tracing: spans are exported again') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(logs.slice(before).some((l) => l.msg === 'tracing: spans are exported again')).toBe(true);
  });
});
