import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { healthOptionsSchema } from '../../../../plugins/observe/health/schema.ts';

describe('health options', () => {
  it('defaults: probes on the channel listener too, a 1 s store check', () => {
    expect(healthOptionsSchema.parse(undefined)).toEqual({ channel_listener: true, store_timeout_ms: 1000 });
    expect(healthOptionsSchema.parse({ channel_listener: false })).toEqual({ channel_listener: false, store_timeout_ms: 1000 });
  });

  it('bounds the store timeout and refuses unknown keys', () => {
    expect(healthOptionsSchema.safeParse({ store_timeout_ms: 5 }).success).toBe(false);
    expect(healthOptionsSchema.safeParse({ store_timeout_ms: 60_001 }).success).toBe(false);
    expect(healthOptionsSchema.safeParse({ store_timeout_ms: 1.5 }).success).toBe(false);
    expect(healthOptionsSchema.safeParse({ path: '/healthz' }).success).toBe(false);
  });

  it('describes every field', () => {
    const shape = (healthOptionsSchema.unwrap() as z.ZodObject).shape;
    expect(Object.entries(shape).filter(([, f]) => !(f as z.ZodType).description)).toEqual([]);
  });
});
