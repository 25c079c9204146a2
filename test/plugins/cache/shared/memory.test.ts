import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { SvcError } from '../../../../kernel/errors.ts';
import { MemoryCache } from '../../../../plugins/cache/shared/memory.ts';

const cache = (maxEntries = 100, maxBytes = 1 << 20) => {
  const clock = new ManualClock();
  return { clock, c: new MemoryCache({ maxEntries, maxBytes }, clock) };
};

describe('memory cache: time to live on the injected clock', () => {
  it('serves an entry until its ttl is over, then forgets it', () => {
    const { clock, c } = cache();
    c.set('k', '"v"', 1000);
    clock.advance(999);
    expect(c.get('k')).toBe('"v"');
    clock.advance(1);
    expect(c.get('k')).toBeUndefined();
    expect(c.size()).toEqual({ entries: 0, bytes: 0 });
  });

  it('replaces an entry with its new value and ttl', () => {
    const { clock, c } = cache();
    c.set('k', '1', 10);
    c.set('k', '22', 1000);
    clock.advance(500);
    expect(c.get('k')).toBe('22');
    expect(c.size()).toEqual({ entries: 1, bytes: 3 });
  });

  it('says whether delete found a live entry', () => {
    const { clock, c } = cache();
    c.set('a', '1', 100);
    c.set('b', '1', 10);
    clock.advance(10);
    expect(c.delete('a')).toBe(true);
    expect(c.delete('a')).toBe(false);
    expect(c.delete('b')).toBe(false);
    expect(c.size().entries).toBe(0);
  });

  it('sweeps expired entries out on a write a minute later, even ones never read again', () => {
    const { clock, c } = cache();
    for (let i = 0; i < 50; i++) c.set(`old${i}`, 'x', 1000);
    clock.advance(60_000);
    c.set('new', 'x', 1000);
    expect(c.size().entries).toBe(1);
  });
});

describe('memory cache: least recently used out first', () => {
  it('keeps max_entries, a read making an entry recent', () => {
    const { c } = cache(3);
    for (const k of ['a', 'b', 'c']) c.set(k, '1', 60_000);
    c.get('a');
    c.set('d', '1', 60_000);
    expect(['a', 'b', 'c', 'd'].map((k) => c.get(k))).toEqual(['1', undefined, '1', '1']);
  });

  it('keeps max_bytes, counting UTF-8 bytes of keys and values', () => {
    const { c } = cache(100, 20);
    c.set('a', '"ééé"', 60_000); // 1 + 8 bytes
    c.set('b', '"xxxxxxx"', 60_000); // 1 + 9
    expect(c.size()).toEqual({ entries: 2, bytes: 19 });
    c.set('c', '1', 60_000); // 2 more: a goes
    expect(c.get('a')).toBeUndefined();
    expect(c.size()).toEqual({ entries: 2, bytes: 12 });
  });

  it('does not keep an entry larger than the whole budget, nor drop others for it', () => {
    const { c } = cache(100, 20);
    c.set('a', '1', 60_000);
    c.set('big', 'x'.repeat(30), 60_000);
    expect(c.get('big')).toBeUndefined();
    expect(c.get('a')).toBe('1');
  });
});

describe('memory cache: incr and clear', () => {
  it('counts from 0, keeps the first expiry, and refuses a value that is no integer', () => {
    const { clock, c } = cache();
    expect(c.incr('n', 2, 1000)).toBe(2);
    clock.advance(600);
    expect(c.incr('n', -5, 60_000)).toBe(-3);
    clock.advance(400);
    expect(c.get('n')).toBeUndefined();
    c.set('s', '"3"', 1000);
    c.set('f', '1.5', 1000);
    for (const key of ['s', 'f']) expect(() => c.incr(key, 1, 1000)).toThrow(new SvcError('BAD_REQUEST', 'incr needs a value that is an integer'));
    c.set('max', String(Number.MAX_SAFE_INTEGER), 1000);
    expect(() => c.incr('max', 1, 1000)).toThrow(/past 9007199254740991/);
    expect(c.get('max')).toBe(String(Number.MAX_SAFE_INTEGER));
  });

  it('clears the entries under a prefix and says how many', () => {
    const { c } = cache();
    for (const k of ['r:a x', 'r:a y', 'r:b x', 'k:a']) c.set(k, '1', 1000);
    expect(c.clear('r:a ')).toBe(2);
    expect(c.clear('')).toBe(2);
    expect(c.size()).toEqual({ entries: 0, bytes: 0 });
  });
});
