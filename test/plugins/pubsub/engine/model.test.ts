import { describe, expect, it } from 'vitest';
import { EntryQueue, type Entry, type Message } from '../../../../plugins/pubsub/engine/model.ts';

/** The queue reads a message's seq and priority only. */
const entry = (seq: number, priority = 5): Entry => ({ msg: { seq, priority } as Message, deliveryCount: 0, enqueuedAt: 0 });

function queueOf(entries: Entry[]): EntryQueue {
  const q = new EntryQueue();
  for (const e of entries) q.insert(e);
  return q;
}

const seqs = (q: EntryQueue, priority = 5) => q.buckets[priority]!.map((e) => e.msg.seq);

/** A set that counts the lookups made in it: how much of the queue a removal looked at. */
class CountingSet<T> extends Set<T> {
  lookups = 0;
  override has(value: T): boolean {
    this.lookups++;
    return super.has(value);
  }
}

describe('EntryQueue.remove', () => {
  const ten = () => Array.from({ length: 10 }, (_, i) => entry(i + 1));

  it('cuts off the oldest entries (a get by priority) and keeps the rest in order', () => {
    const all = ten();
    const q = queueOf(all);
    q.remove(new Set(all.slice(0, 4)));
    expect(seqs(q)).toEqual([5, 6, 7, 8, 9, 10]);
    expect(q.count).toBe(6);
  });

  it('cuts off the newest entries (a get newest first)', () => {
    const all = ten();
    const q = queueOf(all);
    q.remove(new Set(all.slice(7)));
    expect(seqs(q)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(q.count).toBe(7);
  });

  it('cuts both ends at once, and empties a bucket taken whole', () => {
    const all = ten();
    const q = queueOf(all);
    q.remove(new Set([all[0]!, all[1]!, all[9]!]));
    expect(seqs(q)).toEqual([3, 4, 5, 6, 7, 8, 9]);
    q.remove(new Set(q.buckets[5]!));
    expect(seqs(q)).toEqual([]);
    expect(q.count).toBe(0);
  });

  it('removes entries from the middle of a bucket (a get that skipped one past its byte cap)', () => {
    const all = ten();
    const q = queueOf(all);
    q.remove(new Set([all[0]!, all[2]!, all[5]!]));
    expect(seqs(q)).toEqual([2, 4, 5, 7, 8, 9, 10]);
    expect(q.count).toBe(7);
  });

  it('works per priority: each bucket loses only its own entries', () => {
    const high = [entry(1, 9), entry(4, 9), entry(6, 9)];
    const low = [entry(2, 1), entry(3, 1), entry(5, 1)];
    const q = queueOf([...high, ...low]);
    q.remove(new Set([high[0]!, high[1]!, low[2]!]));
    expect(seqs(q, 9)).toEqual([6]);
    expect(seqs(q, 1)).toEqual([2, 3]);
    expect(q.count).toBe(3);
  });

  it('counts only what it removed when given an entry the queue does not hold', () => {
    const all = ten();
    const q = queueOf(all.slice(0, 9));
    q.remove(new Set([all[0]!, all[9]!]));
    expect(seqs(q)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    expect(q.count).toBe(8);
  });

  it('looks at what a get takes, not at the whole queue: 50 of 100,000 from either end', () => {
    const all = Array.from({ length: 100_000 }, (_, i) => entry(i + 1));
    const q = queueOf(all);
    const oldest = new CountingSet(all.slice(0, 50));
    q.remove(oldest);
    expect(oldest.lookups).toBeLessThanOrEqual(51);
    const newest = new CountingSet(all.slice(-50));
    q.remove(newest);
    expect(newest.lookups).toBeLessThanOrEqual(51);
    expect(q.count).toBe(99_900);
    expect(q.buckets[5]![0]!.msg.seq).toBe(51);
    expect(q.buckets[5]!.at(-1)!.msg.seq).toBe(99_950);
  });
});
