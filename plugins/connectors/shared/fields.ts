import { z } from 'zod';

/**
 * Config keys every connector spells the same way, so a user who set one connector's knows the
 * next one's: the reconnect backoff, the readiness switch and the services allowed.
 */

/** Backoff of reconnect attempts: from min_ms, doubled per failed attempt, up to max_ms. */
export function reconnectSchema(defaults: { min_ms: number; max_ms: number }) {
  return z
    .object({
      min_ms: z.number().int().min(10).max(300_000).default(defaults.min_ms).describe('Wait before the first reconnect attempt after a loss; doubles per failed attempt.'),
      max_ms: z.number().int().min(10).max(3_600_000).default(defaults.max_ms).describe('Longest wait between two reconnect attempts.'),
    })
    .strict()
    .refine((r) => r.max_ms >= r.min_ms, { path: ['max_ms'], message: 'must be at least min_ms' })
    .default(defaults)
    .describe('Reconnect backoff after the connection is lost.');
}

export const readyCheckField = z.boolean().default(false).describe('/ready answers 503 while this is not up (every connection is listed in /ready either way).');

export function allowedServicesField(what: string) {
  return z.array(z.string().min(1)).optional().describe(`Services that may ${what}; every service when absent.`);
}
