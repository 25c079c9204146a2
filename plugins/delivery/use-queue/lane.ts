import type { DeliverySettings } from './schema.ts';

/**
 * One queue's events in memory: ids only (the rows hold the rest). `fresh` are due now, in
 * arrival order; `waiting` are retries and replays with their due time. The next event to start
 * is the oldest due one, so a retry waiting for its delay never holds back later events.
 */
export class Lane {
  private fresh: number[] = [];
  private head = 0;
  private waiting: Array<{ id: number; due: number }> = [];
  readonly running = new Set<number>();
  /** Accepted, not yet committed: counted against max_depth. */
  accepting = 0;
  /** Until when (clock ms) nothing of this queue starts: its tenant's quota refused an attempt. */
  heldUntil = -Infinity;

  constructor(
    readonly channel: string | null,
    public settings: DeliverySettings,
  ) {}

  /** Pending, running and being accepted: what max_depth bounds. */
  get depth(): number {
    return this.fresh.length - this.head + this.waiting.length + this.running.size + this.accepting;
  }

  get hasRoom(): boolean {
    return this.running.size < this.settings.concurrency;
  }

  /** A committed new event (ids rise, but commits of one group may resolve in any order). */
  addFresh(id: number): void {
    const f = this.fresh;
    let i = f.length;
    while (i > this.head && f[i - 1]! > id) i--;
    f.splice(i, 0, id);
  }

  addWaiting(id: number, due: number): void {
    const w = this.waiting.find((e) => e.id === id);
    if (w) w.due = due;
    else if (!this.fresh.includes(id, this.head)) this.waiting.push({ id, due });
  }

  /** Takes the oldest event due at `now`, or undefined. */
  takeDue(now: number): number | undefined {
    let best = -1;
    for (let i = 0; i < this.waiting.length; i++) {
      const w = this.waiting[i]!;
      if (w.due <= now && (best < 0 || w.id < this.waiting[best]!.id)) best = i;
    }
    const freshId = this.head < this.fresh.length ? this.fresh[this.head] : undefined;
    if (freshId !== undefined && (best < 0 || freshId < this.waiting[best]!.id)) {
      this.head++;
      if (this.head > 1024 && this.head * 2 > this.fresh.length) {
        this.fresh = this.fresh.slice(this.head);
        this.head = 0;
      }
      return freshId;
    }
    if (best < 0) return undefined;
    return this.waiting.splice(best, 1)[0]!.id;
  }

  /** When the next waiting event falls due (fresh ones are due already), or Infinity. */
  nextDue(): number {
    if (this.head < this.fresh.length) return -Infinity;
    let next = Infinity;
    for (const w of this.waiting) if (w.due < next) next = w.due;
    return next;
  }

  /** Forgets a pending event (deleted by an operator). */
  remove(id: number): void {
    const i = this.fresh.indexOf(id, this.head);
    if (i >= 0) this.fresh.splice(i, 1);
    const j = this.waiting.findIndex((w) => w.id === id);
    if (j >= 0) this.waiting.splice(j, 1);
  }
}
