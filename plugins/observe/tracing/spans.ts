import { ROOT_CONTEXT, SpanKind, SpanStatusCode, createTraceState, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import type { Channel, Exchange, HookFn, InvokeRequest, TraceContext } from '../../../sdk/plugin/index.ts';
import type { OutgoingCallInfo, OutgoingRequest, OutgoingSpan, QueuedRunInfo, QueuedRunSpan } from '../../capabilities.ts';
import { shownUrl, tracesUrl, type TracingOptions } from './schema.ts';
import { formatTraceparent, parseTraceparent, parseTracestate, type ParentIds } from './w3c.ts';

// Not yet stable in the semantic conventions (the package asks that these be copied, not imported).
const ATTR_URL_TEMPLATE = 'url.template';
const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name';

type ExportDone = Parameters<SpanExporter['export']>[1];

/**
 * The OTLP exporter, with its failures in svc's log: the SDK reports them to a global diagnostic
 * logger that is silent by default. One warning when exports start failing, one line when they
 * work again; the headers (credentials) are never logged.
 */
class ReportingExporter implements SpanExporter {
  private failing = false;

  constructor(
    private readonly inner: SpanExporter,
    private readonly endpoint: string,
    private readonly log: Logger,
  ) {}

  export(spans: Parameters<SpanExporter['export']>[0], done: ExportDone): void {
    this.inner.export(spans, (result) => {
      if (result.code !== 0) {
        if (!this.failing) this.log.warn({ endpoint: this.endpoint, spans: spans.length, error: result.error?.message }, 'tracing: spans could not be exported; they are dropped until the collector answers');
        this.failing = true;
      } else if (this.failing) {
        this.failing = false;
        this.log.info({ endpoint: this.endpoint }, 'tracing: spans are exported again');
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** The context a span continues: the caller's (or our own) span as a remote parent, or a new trace. */
function parentContext(ids: ParentIds | undefined, tracestate: string | undefined): Context {
  if (!ids) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: ids.traceId, spanId: ids.spanId, traceFlags: ids.flags & 1, isRemote: true, traceState: tracestate === undefined ? undefined : createTraceState(tracestate) });
}

function contextOf(span: Span, tracestate: string | undefined): TraceContext {
  const sc = span.spanContext();
  const traceparent = formatTraceparent(sc.traceId, sc.spanId, sc.traceFlags);
  return tracestate === undefined ? { traceparent } : { traceparent, tracestate };
}

/**
 * Spans made with the official SDK and sent over OTLP/HTTP (JSON) in batches. Parents are passed
 * explicitly, never through a global context manager or provider, so nothing outside this object
 * changes (several kernels can run in one process, as the tests do).
 */
export class SpanExport {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly servers = new WeakMap<Exchange, Span>();

  constructor(options: TracingOptions & { endpoint: string }, version: string, log: Logger) {
    const url = tracesUrl(options.endpoint);
    const exporter = new OTLPTraceExporter({ url, headers: options.headers, timeoutMillis: options.timeout_ms });
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.service_name }),
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampling_ratio) }),
      spanProcessors: [
        new BatchSpanProcessor(new ReportingExporter(exporter, shownUrl(url), log), {
          scheduledDelayMillis: options.batch_delay_ms,
          maxQueueSize: options.max_queue,
          maxExportBatchSize: Math.min(512, options.max_queue),
          exportTimeoutMillis: options.timeout_ms,
        }),
      ],
    });
    this.tracer = this.provider.getTracer('svc', version);
  }

  /** The onRequest step of one channel: its server span, child of the caller's when a valid traceparent came. */
  serverStep(channel: Channel): HookFn {
    const route = channel.url_path;
    const statics: Attributes = { [ATTR_HTTP_ROUTE]: route, [ATTR_URL_SCHEME]: 'http', 'svc.channel': channel.name };
    if (channel.service) statics['svc.service'] = channel.service;
    return (ex) => {
      const ids = ex.headers.traceparent === undefined ? undefined : parseTraceparent(ex.headers.traceparent);
      const tracestate = ids && ex.headers.tracestate !== undefined ? parseTracestate(ex.headers.tracestate) : undefined;
      const attributes: Attributes = { ...statics, [ATTR_HTTP_REQUEST_METHOD]: ex.method, [ATTR_URL_PATH]: ex.path, [ATTR_CLIENT_ADDRESS]: ex.clientAddress, 'svc.cid': ex.cid };
      const agent = ex.headers['user-agent'];
      if (typeof agent === 'string') attributes[ATTR_USER_AGENT_ORIGINAL] = agent;
      const span = this.tracer.startSpan(`${ex.method} ${route}`, { kind: SpanKind.SERVER, attributes }, parentContext(ids, tracestate));
      this.servers.set(ex, span);
      ex.trace = contextOf(span, tracestate);
      ex.response.headers.traceresponse = ex.trace.traceparent;
    };
  }

  /** The onResponse step: the status the client got (0: the connection was dropped) ends the server span. */
  readonly endServer: HookFn = (ex) => {
    const span = this.servers.get(ex);
    if (!span) return;
    this.servers.delete(ex);
    if (ex.dropped === true) span.setAttribute('svc.dropped', true);
    else {
      const status = ex.response.status;
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
      // Server spans: a 4xx is the client's error, not ours (semantic conventions for HTTP).
      if (status >= 500) span.setAttribute(ATTR_ERROR_TYPE, String(status)).setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  };

  outgoing(parent: TraceContext | undefined, request: OutgoingRequest, call: OutgoingCallInfo): OutgoingSpan {
    const url = request.url;
    const attributes: Attributes = {
      [ATTR_HTTP_REQUEST_METHOD]: request.method,
      [ATTR_SERVER_ADDRESS]: url.hostname,
      [ATTR_SERVER_PORT]: Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
      // Without the query string: it may carry an API key.
      [ATTR_URL_FULL]: url.origin + url.pathname,
      [ATTR_URL_TEMPLATE]: call.template,
      'svc.connection': call.connection,
    };
    if (call.attempt > 1) attributes[ATTR_HTTP_REQUEST_RESEND_COUNT] = call.attempt - 1;
    const span = this.tracer.startSpan(`${request.method} ${call.template}`, { kind: SpanKind.CLIENT, attributes }, parentContext(parent && parseTraceparent(parent.traceparent), parent?.tracestate));
    const sent = contextOf(span, parent?.tracestate);
    request.headers.traceparent = sent.traceparent;
    if (sent.tracestate !== undefined) request.headers.tracestate = sent.tracestate;
    else delete request.headers.tracestate;
    return {
      end(outcome) {
        if ('status' in outcome) {
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, outcome.status);
          if (outcome.status >= 400) span.setAttribute(ATTR_ERROR_TYPE, String(outcome.status)).setStatus({ code: SpanStatusCode.ERROR });
        } else span.setAttribute(ATTR_ERROR_TYPE, outcome.failure).setStatus({ code: SpanStatusCode.ERROR, message: outcome.failure });
        span.end();
      },
    };
  }

  queuedRun(request: InvokeRequest, run: QueuedRunInfo): QueuedRunSpan {
    const parent = request.trace;
    const queue = run.channel ?? 'background';
    const attributes: Attributes = {
      [ATTR_MESSAGING_OPERATION_TYPE]: 'process',
      [ATTR_MESSAGING_DESTINATION_NAME]: queue,
      'svc.service': request.service,
      'svc.cid': run.cid,
      'svc.queue.event_cid': run.eventCid,
      'svc.queue.attempt': run.attempt,
    };
    if (run.channel !== null) attributes['svc.channel'] = run.channel;
    const span = this.tracer.startSpan(`process ${queue}`, { kind: SpanKind.CONSUMER, attributes }, parentContext(parent && parseTraceparent(parent.traceparent), parent?.tracestate));
    return {
      trace: contextOf(span, parent?.tracestate),
      end(outcome) {
        if (!outcome.ok) span.setAttribute(ATTR_ERROR_TYPE, outcome.kind).setStatus({ code: SpanStatusCode.ERROR, message: outcome.kind });
        span.end();
      },
    };
  }

  /** Sends what is waiting (bounded by timeout_ms), then stops. */
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
