import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP JSON export carries it, attributes flattened to plain values. */
export interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP SpanKind: 2 server, 3 client, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  /** service.name of the resource it came with. */
  service: unknown;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
type OtlpAttributes = Array<{ key: string; value: OtlpValue }> | undefined;

function flat(attributes: OtlpAttributes): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of attributes ?? []) out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue));
  return out;
}

/**
 * A local stand-in for an OpenTelemetry collector: a real HTTP server that takes OTLP/HTTP JSON
 * exports on /v1/traces, answers as a collector does, and keeps what it received.
 */
export class Collector {
  readonly spans: ExportedSpan[] = [];
  readonly requests: Array<{ url: string; headers: Record<string, string | string[] | undefined> }> = [];
  /** Status to answer with (500: a failing collector). */
  status = 200;
  private server: Server | undefined;
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.requests.push({ url: req.url!, headers: req.headers });
        if (this.status !== 200) {
          res.writeHead(this.status).end();
          return;
        }
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{ resource: { attributes: OtlpAttributes }; scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }>;
        };
        for (const rs of body.resourceSpans) {
          const service = flat(rs.resource.attributes)['service.name'];
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans) {
              this.spans.push({
                traceId: s.traceId as string,
                spanId: s.spanId as string,
                parentSpanId: (s.parentSpanId as string | undefined) || undefined,
                name: s.name as string,
                kind: s.kind as number,
                attributes: flat(s.attributes as OtlpAttributes),
                status: (s.status ?? {}) as ExportedSpan['status'],
                service,
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** Waits (polling, 20 ms apart) until spans matching `find` have arrived. */
  async waitFor(find: (spans: ExportedSpan[]) => ExportedSpan[], count = 1, timeoutMs = 10_000): Promise<ExportedSpan[]> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const found = find(this.spans);
      if (found.length >= count) return found;
      if (Date.now() > end) throw new Error(`${count} span(s) did not arrive in ${timeoutMs} ms; received: ${JSON.stringify(this.spans.map((s) => [s.name, s.traceId, s.spanId, s.parentSpanId]))}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }
}
