import { describe, expect, it } from 'vitest';
import { publishRequestA, quickPublishA } from '../../../../plugins/pubsub/variant-a/schemas.ts';
import { publishRequestB, quickPublishB } from '../../../../plugins/pubsub/variant-b/schemas.ts';

/** Values each field takes in the generated bodies: valid ones, edges, and wrong types. */
const CANDIDATES: Record<string, unknown[]> = {
  data: [undefined, null, '', 'x', 0, -1.5, true, false, [], [1, 'a'], {}, { order: 1 }, Object.create(null) as object],
  priority: [undefined, null, 0, 1, 5, 9, 10, -1, 2.5, '5', true],
  expiration: [undefined, null, 0, 1, 60, 2_147_483_647, 2_147_483_648, 1.5, '60', -3],
  correl_id: [undefined, null, '', 'c-1', 'x'.repeat(1024), 'x'.repeat(1025), 7],
  in_reply_to: [undefined, null, 'svcpsm1', 'y'.repeat(1025), {}],
  ext_client_id: [undefined, 'erp', 'z'.repeat(1025), false],
  has_gd: [undefined, null, true, false, 'true', 1],
  pub_time: [undefined, '2026-03-01T12:00:00Z', 'yesterday'],
  extra: [undefined, 'ignored'],
};

/** A deterministic pseudo-random sequence, so a failure reproduces. */
function* bodies(n: number): Generator<unknown> {
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let i = 0; i < n; i++) {
    const body: Record<string, unknown> = {};
    for (const [key, values] of Object.entries(CANDIDATES)) {
      const v = values[next() % values.length];
      if (v !== undefined) body[key] = v;
    }
    yield body;
  }
  yield* [undefined, null, 'text', 42, [{ data: 'x' }]];
}

/** zod leaves absent optional fields out; the quick path writes them as undefined. */
function defined(o: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

describe('quick publish parsing agrees with the schemas', () => {
  for (const [variant, quick, schema] of [
    ['A', quickPublishA, publishRequestA],
    ['B', quickPublishB, publishRequestB],
  ] as const) {
    it(`variant ${variant}: every body the quick path accepts, the schema accepts with the same result`, () => {
      let accepted = 0;
      let checked = 0;
      for (const body of bodies(20_000)) {
        const fast = quick(body);
        const slow = schema.safeParse(body);
        checked++;
        if (fast === undefined) continue;
        accepted++;
        expect(slow.success, JSON.stringify(body)).toBe(true);
        expect(defined(fast), JSON.stringify(body)).toEqual(defined(slow.data!));
      }
      expect(checked).toBeGreaterThan(20_000);
      // Enough plainly valid bodies among the generated ones that the comparison means something.
      expect(accepted).toBeGreaterThan(50);
    });
  }

  it('takes the common bodies (or the speed-up silently disappears)', () => {
    const common = [{ data: { order: 1 } }, { data: 'text', priority: 7, expiration: 60, correl_id: 'c', in_reply_to: 'm', ext_client_id: 'e' }];
    for (const body of common) {
      expect(quickPublishA({ ...body, has_gd: true })).toBeDefined();
      expect(quickPublishB(body)).toBeDefined();
    }
  });
});
