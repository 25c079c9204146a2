import { z } from 'zod';

export const HEALTH_PATH = '/health';
export const READY_PATH = '/ready';

export const healthOptionsSchema = z
  .object({
    channel_listener: z
      .boolean()
      .default(true)
      .describe(
        'Serve /health and /ready on the channel listener too (where Kubernetes probes reach a pod); channels may then not use these two paths. The admin listener serves them always.',
      ),
    store_timeout_ms: z
      .number()
      .int()
      .min(10)
      .max(60_000)
      .default(1000)
      .describe('How long /ready waits for the data store to answer a trivial query before it counts as unreachable.'),
  })
  .strict()
  .prefault({});

export type HealthOptions = z.infer<typeof healthOptionsSchema>;
