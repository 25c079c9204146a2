import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { maskSubKey, messagesArgs, subscribeArgs, subscriptionId, subscriptionsArgs, unsubscribeArgs } from '../../../../plugins/pubsub/engine/control.ts';
import { newSubKey } from '../../../../plugins/pubsub/engine/ids.ts';

const fieldsOf = (schema: z.ZodType): Record<string, z.ZodType> => {
  const inner = (schema as unknown as { shape?: Record<string, z.ZodType>; def: { in?: z.ZodType; schema?: z.ZodType } }).shape;
  return inner ?? fieldsOf((schema as unknown as { def: { in?: z.ZodType; schema?: z.ZodType } }).def.in ?? (schema as unknown as { def: { schema: z.ZodType } }).def.schema);
};

describe('pubsub control op schemas', () => {
  it('every argument has a description', () => {
    for (const schema of [subscriptionsArgs, messagesArgs, subscribeArgs, unsubscribeArgs]) {
      const missing = Object.entries(fieldsOf(schema)).filter(([, f]) => !f.description).map(([k]) => k);
      expect(missing).toEqual([]);
    }
  });

  it('a subscription is named by id, or by endpoint and topic, never both', () => {
    expect(unsubscribeArgs.safeParse({ id: 'a'.repeat(20) }).success).toBe(true);
    expect(unsubscribeArgs.safeParse({ endpoint: 'e', topic: '/t' }).success).toBe(true);
    expect(unsubscribeArgs.safeParse({ endpoint: 'e' }).success).toBe(false);
    expect(unsubscribeArgs.safeParse({ topic: '/t' }).success).toBe(false);
    expect(unsubscribeArgs.safeParse({ id: 'a'.repeat(20), topic: '/t' }).success).toBe(false);
    expect(unsubscribeArgs.safeParse({ id: 'A'.repeat(20) }).success).toBe(false);
    expect(unsubscribeArgs.safeParse({}).success).toBe(false);
    expect(messagesArgs.parse({ id: 'a'.repeat(20) })).toEqual({ id: 'a'.repeat(20), limit: 20 });
    expect(messagesArgs.safeParse({ id: 'a'.repeat(20), limit: 101 }).success).toBe(false);
    expect(subscribeArgs.safeParse({ endpoint: 'e', topic: '/orders/*' }).success).toBe(false);
  });

  it('ids are stable per key and differ between keys; the mask shows 4 random characters', () => {
    const key = newSubKey();
    expect(subscriptionId(key)).toBe(subscriptionId(key));
    expect(subscriptionId(key)).not.toBe(subscriptionId(newSubKey()));
    expect(subscriptionId(key)).toMatch(/^[0-9a-f]{20}$/);
    expect(maskSubKey(key)).toBe(`${key.slice(0, 11)}…`);
    expect(maskSubKey('abcdefgh')).toBe('abcd…');
  });
});
