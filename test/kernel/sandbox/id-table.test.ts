import { describe, expect, it } from 'vitest';
import { IdTable } from '../../../kernel/sandbox/id-table.ts';

/** A seeded generator, so a failure replays. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32);
}

describe('IdTable', () => {
  it('answers as a Map does under random adds and deletes, across growth and wrapped runs', () => {
    for (const seed of [1, 2, 3, 42]) {
      const next = random(seed);
      const table = new IdTable<string>(8);
      const model = new Map<number, string>();
      let id = 1_000 * seed;
      for (let step = 0; step < 20_000; step++) {
        const r = next();
        if (r < 0.45 || model.size === 0) {
          // Mostly fresh, growing ids (as the pool's), some far apart so runs wrap the table's end.
          id += r < 0.05 ? 1 + Math.floor(next() * 5_000) : 1;
          table.set(id, `v${id}`);
          model.set(id, `v${id}`);
        } else if (r < 0.9) {
          const keys = [...model.keys()];
          const victim = keys[Math.floor(next() * keys.length)]!;
          expect(table.delete(victim)).toBe(true);
          model.delete(victim);
          expect(table.delete(victim)).toBe(false);
        } else {
          const probe = id - Math.floor(next() * 200);
          expect(table.get(probe)).toBe(model.get(probe));
          expect(table.has(probe)).toBe(model.has(probe));
        }
        expect(table.size).toBe(model.size);
      }
      for (const [k, v] of model) expect(table.get(k)).toBe(v);
      expect(table.values().sort()).toEqual([...model.values()].sort());
    }
  });

  it('replaces the value of an id it holds, and lets its caller delete while walking values()', () => {
    const table = new IdTable<number>();
    table.set(5, 1).set(5, 2).set(6, 3);
    expect(table.size).toBe(2);
    expect(table.get(5)).toBe(2);
    for (const v of table.values()) table.delete(v === 2 ? 5 : 6);
    expect(table.size).toBe(0);
    expect(table.values()).toEqual([]);
    table.set(7, 1).set(8, 2).clear();
    expect([table.size, table.get(7), table.has(8)]).toEqual([0, undefined, false]);
    expect(table.set(8, 3).get(8)).toBe(3);
  });

  it('refuses an id that is not a safe non-negative integer', () => {
    const table = new IdTable<number>();
    expect(() => table.set(-1, 1)).toThrow(RangeError);
    expect(() => table.set(1.5, 1)).toThrow(RangeError);
    expect(table.get(-1)).toBeUndefined();
    expect(table.has(-1)).toBe(false);
  });
});
