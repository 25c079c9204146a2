import { z } from 'zod';

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export const DEFAULT_SERVICE_NAME = 'svc';

export const tracingOptionsSchema = z
  .object({
    endpoint: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe(
        'OTLP/HTTP (JSON) traces endpoint of a collector, e.g. http://127.0.0.1:4318/v1/traces; a URL without a path gets /v1/traces. Absent: no spans are made or exported, and an incoming traceparent is only passed on.',
      ),
    headers: z
      .record(z.string().regex(TOKEN, 'is not a header name'), z.string().regex(FIELD_VALUE, 'holds control characters'))
      .default({})
      .describe('Headers sent with every export (a vendor API key: use ${ENV} rather than the key itself). Never logged.')
      .meta({ writeOnly: true }),
    service_name: z.string().min(1).max(256).default(DEFAULT_SERVICE_NAME).describe('The `service.name` resource attribute of every span.'),
    sampling_ratio: z
      .number()
      .min(0)
      .max(1)
      .default(1)
      .describe('Share of new traces recorded (0 to 1). A request that brings a traceparent follows the caller’s sampled flag instead (parent-based sampling).'),
    batch_delay_ms: z.number().int().min(10).max(60_000).default(5000).describe('Longest wait before ended spans are sent, in milliseconds (they go sooner once 512 are waiting).'),
    max_queue: z
      .number()
      .int()
      .min(64)
      .max(1_000_000)
      .default(2048)
      .describe('Ended spans waiting for export at most; past it new spans are dropped (a slow collector never slows requests).'),
    timeout_ms: z.number().int().min(100).max(60_000).default(10_000).describe('Time limit of one export request, in milliseconds; also bounds the flush when the server stops.'),
  })
  .strict()
  .default({ headers: {}, service_name: DEFAULT_SERVICE_NAME, sampling_ratio: 1, batch_delay_ms: 5000, max_queue: 2048, timeout_ms: 10_000 });

export type TracingOptions = z.infer<typeof tracingOptionsSchema>;

/** The endpoint as the exporter takes it: a bare collector address gets the traces path. */
export function tracesUrl(endpoint: string): string {
  const url = new URL(endpoint);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/v1/traces';
  return url.href;
}

/** The endpoint as log lines show it: no user, password or query (they may be credentials). */
export function shownUrl(endpoint: string): string {
  const url = new URL(tracesUrl(endpoint));
  return url.origin + url.pathname;
}
