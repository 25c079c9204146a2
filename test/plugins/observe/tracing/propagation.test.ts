import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { json, Upstream } from '../../outgoing/rest/upstream.ts';
import { until } from '../../delivery/use-queue/support.ts';
import { Collector } from './collector.ts';

/**
 * Without an endpoint (the default) nothing is recorded or exported: a caller's valid traceparent
 * is passed on unchanged to outgoing calls and queued events, a request without one gets none,
 * and the response carries no traceresponse. With the plugin disabled nothing is passed on.
 */
const upstream = new Upstream();
const collector = new Collector();
const logs: Array<Record<string, unknown>> = [];
let k: TestKernel;
let closed = true;

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

const CALLER = `import { service, outgoing } from 'svc/sdk';
export default service({ async handle(ctx) { ctx.log.info('calling up'); return { status: (await outgoing('up').get(ctx.cid)).status }; } });
`;

const config = (plugins: string) => `
plugins:
${plugins}
  use-queue: { config: { stop_wait_ms: 0 } }
channel_rest:
  - { name: caller, url_path: /call, service: caller, security: none }
  - { name: queued, url_path: /queued, service: caller, security: none, method: POST, use_queue: true }
outgoing_rest:
  - { name: up, address: "http://127.0.0.1:${upstream.port}", url_path: /echo }
`;

// Were an exporter made by mistake, it would find the collector here (the SDK's standard variable).
const savedEndpoint = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;

beforeAll(async () => {
  await collector.start();
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `${collector.url}/v1/traces`;
  await upstream.route('/echo', (_req, res) => json(res, 200, { ok: true })).start();
});

afterAll(async () => {
  if (savedEndpoint === undefined) delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  else process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = savedEndpoint;
  await upstream.close();
  await collector.close();
});

beforeEach(() => upstream.reset());
afterEach(async () => {
  if (!closed) await k.close();
  closed = true;
});

describe('tracing without export (the default)', () => {
  beforeEach(async () => {
    logs.length = 0;
    k = await startKernel({ config: config('  tracing: true'), services: { 'caller.ts': CALLER }, logs });
    closed = false;
  });

  it("passes a caller's traceparent and tracestate on unchanged; the log lines carry its trace", async () => {
    const res = await k.app.inject({ method: 'GET', url: '/call', headers: { traceparent: TRACEPARENT, tracestate: 'rojo=1,congo=2' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers.traceresponse).toBeUndefined();
    const [seen] = upstream.hits('/echo');
    expect(seen!.headers.traceparent).toBe(TRACEPARENT);
    expect(seen!.headers.tracestate).toBe('rojo=1,congo=2');
    expect(logs.find((l) => l.msg === 'calling up')).toMatchObject({ cid: res.headers['x-svc-cid'], trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' });
  });

  it('adds no traceparent when none came, or when the one that came is malformed (and then drops the tracestate)', async () => {
    await k.app.inject({ method: 'GET', url: '/call' });
    await k.app.inject({ method: 'GET', url: '/call', headers: { traceparent: TRACEPARENT.toUpperCase(), tracestate: 'rojo=1' } });
    await k.app.inject({ method: 'GET', url: '/call', headers: { traceparent: `${TRACEPARENT}-x`, tracestate: 'rojo=1' } });
    const hits = upstream.hits('/echo');
    expect(hits).toHaveLength(3);
    for (const seen of hits) {
      expect(seen.headers.traceparent).toBeUndefined();
      expect(seen.headers.tracestate).toBeUndefined();
    }
    expect(logs.find((l) => l.msg === 'calling up')).not.toHaveProperty('trace_id');
  });

  it("stores the caller's trace context with a queued event, and its run passes it on", async () => {
    const res = await k.app.inject({ method: 'POST', url: '/queued', payload: {}, headers: { traceparent: TRACEPARENT, tracestate: 'rojo=1' } });
    expect(res.statusCode).toBe(200);
    await until(k, (r) => r.length === 0);
    const [seen] = upstream.hits('/echo');
    expect(seen!.headers.traceparent).toBe(TRACEPARENT);
    expect(seen!.headers.tracestate).toBe('rojo=1');
  });

  it('sends nothing to a collector', async () => {
    await k.app.inject({ method: 'GET', url: '/call', headers: { traceparent: TRACEPARENT } });
    await k.app.inject({ method: 'POST', url: '/queued', payload: {}, headers: { traceparent: TRACEPARENT } });
    await until(k, (r) => r.length === 0);
    // Stopping flushes an exporter's spans, were there one.
    await k.close();
    closed = true;
    expect(upstream.hits('/echo')).toHaveLength(2);
    expect(collector.requests).toEqual([]);
  });
});

describe('the tracing plugin disabled', () => {
  it('passes no trace context on, to outgoing calls or queued events', async () => {
    k = await startKernel({ config: config('  tracing: false'), services: { 'caller.ts': CALLER } });
    closed = false;
    await k.app.inject({ method: 'GET', url: '/call', headers: { traceparent: TRACEPARENT } });
    await k.app.inject({ method: 'POST', url: '/queued', payload: {}, headers: { traceparent: TRACEPARENT } });
    await until(k, (r) => r.length === 0);
    const hits = upstream.hits('/echo');
    expect(hits).toHaveLength(2);
    for (const seen of hits) expect(seen.headers.traceparent).toBeUndefined();
  });
});
