import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { recentArgsSchema, statsArgsSchema, trafficOptionsSchema } from '../../../../plugins/observe/traffic/schema.ts';

/** Every field of an object schema carries a description (the Dashboard shows it as help). */
function undescribed(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape)
    .filter(([, field]) => !(field as z.ZodType).description)
    .map(([key]) => key);
}

describe('traffic schemas', () => {
  it('keeps the last 1000 requests unless told otherwise, within 10..100000', () => {
    expect(trafficOptionsSchema.parse(undefined)).toEqual({ recent: 1000 });
    expect(trafficOptionsSchema.parse({ recent: 50 })).toEqual({ recent: 50 });
    expect(trafficOptionsSchema.safeParse({ recent: 5 }).success).toBe(false);
    expect(trafficOptionsSchema.safeParse({ recent: 100_001 }).success).toBe(false);
    expect(trafficOptionsSchema.safeParse({ size: 10 }).success).toBe(false);
  });

  it('op arguments have defaults, bounds and a description on every field', () => {
    expect(recentArgsSchema.parse({})).toEqual({ limit: 100 });
    expect(recentArgsSchema.safeParse({ limit: 0 }).success).toBe(false);
    expect(recentArgsSchema.safeParse({ after_seq: 1.5 }).success).toBe(false);
    expect(statsArgsSchema.parse({})).toEqual({ seconds: 300, step: 1 });
    expect(statsArgsSchema.safeParse({ seconds: 0 }).success).toBe(false);
    expect(statsArgsSchema.safeParse({ step: 61 }).success).toBe(false);
    expect(undescribed(recentArgsSchema)).toEqual([]);
    expect(undescribed(statsArgsSchema)).toEqual([]);
  });
});
