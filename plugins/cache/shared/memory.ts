import { SvcError, type Clock } from '../../../sdk/plugin/index.ts';
import type { CacheBackend } from './backend.ts';

export interface MemoryLimits {
  /** Most entries; past it the least recently used go. */
  maxEntries: number;
  /** Most bytes of keys and values (UTF-8); past it the least recently used go. */
  maxBytes: number;
}

interface Entry {
  text: string;
  expiresAt: number;
  bytes: number;
}

/** How often (in clock time, checked on writes) expired entries are swept out. */
const SWEEP_EVERY_MS = 60_000;

/**
 * A cache in this node's memory: least recently used out first once it holds `maxEntries` entries
 * or `maxBytes` bytes, each entry dropped when its time to live is over. A Map keeps the order of
 * use (a hit moves its entry to the end), so eviction takes from the front. Time is the injected
 * clock's: tests move it instead of sleeping.
 */
export class MemoryCache implements CacheBackend {
  readonly kind = 'memory';
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private lastSweep: number;

  constructor(
    private readonly limits: MemoryLimits,
    private readonly clock: Clock,
  ) {
    this.lastSweep = clock.now();
  }

  get(key: string): string | undefined {
    const entry = this.live(key, this.clock.now());
    if (entry === undefined) return undefined;
    // Most recently used goes last.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.text;
  }

  set(key: string, text: string, ttlMs: number): void {
    this.put(key, text, this.clock.now() + ttlMs);
  }

  delete(key: string): boolean {
    const entry = this.entries.get(key);
    if (entry === undefined) return false;
    this.drop(key, entry);
    return entry.expiresAt > this.clock.now();
  }

  incr(key: string, by: number, ttlMs: number): number {
    const now = this.clock.now();
    const entry = this.live(key, now);
    const current = entry === undefined ? 0 : countOf(entry.text);
    const sum = current + by;
    if (!Number.isSafeInteger(sum)) throw new SvcError('BAD_REQUEST', `incr would take the value past ${Number.MAX_SAFE_INTEGER}`);
    this.put(key, String(sum), entry?.expiresAt ?? now + ttlMs);
    return sum;
  }

  clear(prefix: string): number {
    let dropped = 0;
    for (const [key, entry] of this.entries) {
      if (!key.startsWith(prefix)) continue;
      this.drop(key, entry);
      dropped++;
    }
    return dropped;
  }

  size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  async close(): Promise<void> {
    this.entries.clear();
    this.bytes = 0;
  }

  /** The entry unless it expired (then it is dropped). */
  private live(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > now) return entry;
    this.drop(key, entry);
    return undefined;
  }

  private put(key: string, text: string, expiresAt: number): void {
    const now = this.clock.now();
    if (now - this.lastSweep >= SWEEP_EVERY_MS) this.sweep(now);
    const old = this.entries.get(key);
    if (old !== undefined) this.drop(key, old);
    const entry = { text, expiresAt, bytes: Buffer.byteLength(key) + Buffer.byteLength(text) };
    // An entry larger than the whole budget would only push out everything else, then itself.
    if (entry.bytes > this.limits.maxBytes) return;
    this.entries.set(key, entry);
    this.bytes += entry.bytes;
    for (const [oldest, first] of this.entries) {
      if (this.entries.size <= this.limits.maxEntries && this.bytes <= this.limits.maxBytes) break;
      this.drop(oldest, first);
    }
  }

  private drop(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.drop(key, entry);
  }
}

/** The integer a stored value holds, for incr: JSON text of a safe integer, nothing else. */
function countOf(text: string): number {
  const value: unknown = /^-?\d{1,16}$/.test(text) ? Number(text) : undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new SvcError('BAD_REQUEST', 'incr needs a value that is an integer');
  return value;
}
