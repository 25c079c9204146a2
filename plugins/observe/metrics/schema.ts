import { z } from 'zod';

/** Seconds. The channel path takes well under a millisecond in the kernel, so the low end is fine-grained. */
export const DEFAULT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const metricsOptionsSchema = z
  .object({
    token: z
      .string()
      .min(16)
      .max(4096)
      .optional()
      .describe(
        'When set, GET /metrics answers only requests with `Authorization: Bearer <token>` (Prometheus: `authorization: { credentials: … }`). Write it as `${ENV_NAME}` to keep it out of the file. Unset: no check; the admin listener binds loopback by default.',
      ),
    buckets: z
      .array(z.number().positive().finite())
      .min(1)
      .max(40)
      .default(DEFAULT_BUCKETS)
      .refine((b) => b.every((v, i) => i === 0 || v > b[i - 1]!), 'bucket bounds must be in ascending order')
      .describe(`Upper bounds of the request duration histogram (svc_http_request_duration_seconds), in seconds, ascending; +Inf is added. Default: ${DEFAULT_BUCKETS.join(', ')}.`),
    process_metrics: z
      .boolean()
      .default(true)
      .describe("The kernel process's own metrics (CPU, memory, event loop lag, GC, handles: prom-client's default metrics, unprefixed)."),
  })
  .strict()
  .prefault({});

export type MetricsOptions = z.infer<typeof metricsOptionsSchema>;
