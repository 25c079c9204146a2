/** In-memory records of the engine. The store mirrors the persistent ones (see persistence.ts). */

export interface Message {
  msgId: string;
  /** Publication order, increasing; survives restarts (stored). */
  seq: number;
  topic: string;
  data: unknown;
  /** JSON text of data, as stored. */
  dataJson: string;
  size: number;
  mimeType: string;
  priority: number;
  expiration: number | undefined;
  expiresAt: number | undefined;
  pubTime: number;
  recvTime: number;
  correlId: string | undefined;
  inReplyTo: string | undefined;
  extClientId: string | undefined;
  hasGd: boolean;
  publisher: string;
  /** Stored in the data store (GD on a non-ephemeral topic). */
  persistent: boolean;
  /** Queue entries, in-flight deliveries and the topic's retained slot holding this message. */
  refs: number;
}

export interface Entry {
  msg: Message;
  deliveryCount: number;
  enqueuedAt: number;
}

export type SubscriptionSource = 'config' | 'api';

export interface Subscription {
  subKey: string;
  endpoint: string;
  topic: string;
  source: SubscriptionSource;
  /** Stored (the topic is not ephemeral). */
  persistent: boolean;
  createdAt: number;
  queue: EntryQueue;
}

export const PRIORITY_LEVELS = 10;

/**
 * A subscriber queue (or a topic's retained set): one array per priority, each sorted by
 * publication order. Appends are the common case (O(1)); late arrivals (retained moves,
 * redeliveries, group commits finishing out of order) go in by binary search.
 */
export class EntryQueue {
  readonly buckets: Entry[][] = Array.from({ length: PRIORITY_LEVELS }, () => []);
  private size = 0;

  get count(): number {
    return this.size;
  }

  insert(entry: Entry): void {
    const bucket = this.buckets[entry.msg.priority]!;
    const seq = entry.msg.seq;
    if (bucket.length === 0 || bucket[bucket.length - 1]!.msg.seq < seq) {
      bucket.push(entry);
    } else {
      let lo = 0;
      let hi = bucket.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (bucket[mid]!.msg.seq < seq) lo = mid + 1;
        else hi = mid;
      }
      bucket.splice(lo, 0, entry);
    }
    this.size++;
  }

  /** Every entry, in no particular order. */
  *entries(): IterableIterator<Entry> {
    for (const bucket of this.buckets) yield* bucket;
  }

  removeAll(): Entry[] {
    const all: Entry[] = [];
    for (let p = 0; p < PRIORITY_LEVELS; p++) {
      all.push(...this.buckets[p]!);
      this.buckets[p] = [];
    }
    this.size = 0;
    return all;
  }

  /**
   * Removes the given entries (a set of this queue's entries). A get takes a run from one end of
   * each bucket (oldest first by priority, or newest first), so the run is cut off that end with
   * no lookup in the rest of the bucket (a cut at the front still moves the rest down, one memory
   * copy): a get's lookups are what it takes, not the queue's depth.
   * Entries from the middle of a bucket (a get that skipped a message too large for its byte cap)
   * make that bucket be copied without them.
   */
  remove(gone: ReadonlySet<Entry>): void {
    if (gone.size === 0) return;
    const perBucket = new Array<number>(PRIORITY_LEVELS).fill(0);
    for (const entry of gone) perBucket[entry.msg.priority]!++;
    for (let p = 0; p < PRIORITY_LEVELS; p++) {
      const wanted = perBucket[p]!;
      if (wanted === 0) continue;
      const bucket = this.buckets[p]!;
      const before = bucket.length;
      let head = 0;
      while (head < wanted && head < before && gone.has(bucket[head]!)) head++;
      let tail = 0;
      while (head + tail < wanted && before - 1 - tail >= head && gone.has(bucket[before - 1 - tail]!)) tail++;
      if (head + tail === wanted) {
        bucket.length = before - tail;
        if (head > 0) bucket.splice(0, head);
        this.size -= wanted;
      } else {
        const kept = bucket.filter((e) => !gone.has(e));
        this.buckets[p] = kept;
        this.size -= before - kept.length;
      }
    }
  }

  /** Removes and returns the entries that satisfy the predicate. */
  removeWhere(predicate: (entry: Entry) => boolean): Entry[] {
    const removed: Entry[] = [];
    for (let p = 0; p < PRIORITY_LEVELS; p++) {
      const bucket = this.buckets[p]!;
      if (!bucket.some(predicate)) continue;
      const kept: Entry[] = [];
      for (const e of bucket) (predicate(e) ? removed : kept).push(e);
      this.buckets[p] = kept;
    }
    this.size -= removed.length;
    return removed;
  }
}

/** Resources as the engine takes them (config, built-ins, `svc demo`). */
export interface TopicDef {
  name: string;
  max_depth?: number | undefined;
}
export interface EndpointDef {
  name: string;
  security?: string | undefined;
  pub: readonly string[];
  sub: readonly string[];
  services?: readonly string[] | undefined;
}
export interface SubscriptionDef {
  endpoint: string;
  topics: readonly string[];
}
export interface ResourceSet {
  topics: readonly TopicDef[];
  endpoints: readonly EndpointDef[];
  subscriptions: readonly SubscriptionDef[];
}

export interface TopicInfo {
  name: string;
  maxDepth: number;
  ephemeral: boolean;
  /** Messages published while the topic had no subscriber, waiting for the first one. */
  retained: number;
  subscriptions: number;
  /** Entries in its subscribers' queues (a message queued for two subscribers counts twice). */
  queued: number;
}

export function clampPriority(p: number): number {
  return Math.min(PRIORITY_LEVELS - 1, Math.max(0, Math.trunc(p)));
}
