import { definePlugin, type HookFn } from '../../../sdk/plugin/index.ts';
import type { Tracing } from '../../capabilities.ts';
import { shownUrl, tracingOptionsSchema, type TracingOptions } from './schema.ts';
import type { SpanExport } from './spans.ts';
import { parseTraceparent, parseTracestate, passOn } from './w3c.ts';

const VERSION = '1.0.0';

interface TracingState {
  /** Undefined when no endpoint is configured: nothing is recorded, a caller's trace is only passed on. */
  spans: SpanExport | undefined;
}

/**
 * Without export, a request that brings a valid traceparent keeps it as its trace context: outgoing
 * calls and queued events pass it on unchanged, so the upstream's spans join the caller's trace.
 * A request without one costs a property read.
 */
const passThrough: HookFn = (ex) => {
  const header = ex.headers.traceparent;
  if (header === undefined) return;
  const ids = parseTraceparent(header);
  if (!ids) return;
  const tracestate = ex.headers.tracestate === undefined ? undefined : parseTracestate(ex.headers.tracestate);
  const traceparent = passOn(header as string, ids);
  ex.trace = tracestate === undefined ? { traceparent } : { traceparent, tracestate };
};

function tracing(state: TracingState): Tracing {
  return {
    outgoing(parent, request, call) {
      if (state.spans) return state.spans.outgoing(parent, request, call);
      if (!parent) return undefined;
      request.headers.traceparent = parent.traceparent;
      if (parent.tracestate !== undefined) request.headers.tracestate = parent.tracestate;
      return undefined;
    },
    queuedRun: (request, run) => state.spans?.queuedRun(request, run),
  };
}

/** W3C trace context on channels, outgoing calls and queued events; OpenTelemetry export (OTLP/HTTP) when configured. See README.md. */
export default definePlugin<TracingOptions, TracingState>({
  name: 'tracing',
  kind: 'other',
  version: VERSION,
  sdk: '^1.1.0',
  provides: ['observe.tracing'],
  configSchema: tracingOptionsSchema,
  async setup(kernel, options) {
    const state: TracingState = { spans: undefined };
    if (options.endpoint !== undefined) {
      // The SDK is loaded only when spans are exported: without an endpoint it costs nothing, not even its import.
      const { SpanExport } = await import('./spans.ts');
      state.spans = new SpanExport({ ...options, endpoint: options.endpoint }, VERSION, kernel.log.child({ plugin: 'tracing' }));
      kernel.log.info({ endpoint: shownUrl(options.endpoint), sampling_ratio: options.sampling_ratio }, 'tracing: spans are exported over OTLP/HTTP');
    }
    kernel.provide('observe.tracing', tracing(state));
    return state;
  },
  async stop(state) {
    await state.spans?.shutdown();
  },
  hooks: {
    onRequest: ({ channel, state }) => (state.spans ? state.spans.serverStep(channel) : passThrough),
    onResponse: ({ state }) => state.spans?.endServer,
  },
});
