import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { DEFAULT_BUCKETS, metricsOptionsSchema } from '../../../../plugins/observe/metrics/schema.ts';

function undescribed(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape)
    .filter(([, field]) => !(field as z.ZodType).description)
    .map(([key]) => key);
}

describe('metrics options', () => {
  it('defaults: no token, the default buckets, process metrics on', () => {
    expect(metricsOptionsSchema.parse(undefined)).toEqual({ buckets: DEFAULT_BUCKETS, process_metrics: true });
    expect(metricsOptionsSchema.parse({ token: 'a-token-of-16-chars', process_metrics: false })).toEqual({ token: 'a-token-of-16-chars', buckets: DEFAULT_BUCKETS, process_metrics: false });
  });

  it('refuses short tokens, unordered or non-positive buckets, unknown keys', () => {
    expect(metricsOptionsSchema.safeParse({ token: 'short' }).success).toBe(false);
    expect(metricsOptionsSchema.safeParse({ buckets: [0.1, 0.05] }).success).toBe(false);
    expect(metricsOptionsSchema.safeParse({ buckets: [0.1, 0.1] }).success).toBe(false);
    expect(metricsOptionsSchema.safeParse({ buckets: [0, 1] }).success).toBe(false);
    expect(metricsOptionsSchema.safeParse({ buckets: [] }).success).toBe(false);
    expect(metricsOptionsSchema.safeParse({ path: '/m' }).success).toBe(false);
    expect(metricsOptionsSchema.parse({ buckets: [0.5, 2] }).buckets).toEqual([0.5, 2]);
  });

  it('describes every field', () => {
    expect(undescribed(metricsOptionsSchema.unwrap() as z.ZodObject)).toEqual([]);
  });
});
