import { monotonicClock, type Clock } from './clock.ts';

/**
 * A bound on how long a request waits on a step of its chain. The service call has its own
 * limit (its time limit plus the pool's margin) and the request's arrival has
 * `server.request_timeout_ms`; every other step (a body being parsed, a credential checked
 * against the store, a plugin's handler or invoke hook) had none, so a step that never settled
 * (a parser bug, a store that stopped answering) held its request and connection for good.
 *
 * One timer for the whole kernel, not one per request: a request enters the watch when a step
 * of it first awaits, and the deadlines are read from a coarse clock the timer keeps (off by at
 * most one tick), which runs from the first step on; before that there is no coarse time to read,
 * so the first deadline starts it. A request past its deadline goes to `expire`, which answers it, or says it is
 * not to be cut yet (its body is still arriving): then its step gets the whole limit again.
 */
export class StepWatch<R extends { stepUntil: number; watchIndex: number }, C> {
  /**
   * The requests watched, in the first `count` places, each at its `watchIndex`; removal moves
   * the last one into the hole. Arrays kept at their longest, not a Map: a Map that gains and
   * loses a request per request is rebuilt every few dozen, and the dead tables it leaves in the
   * old generation keep the requests they held alive through every scavenge until a full GC
   * (kernel/sandbox/id-table.ts says more). Emptied places hold nothing.
   */
  private readonly requests: Array<R | undefined> = [];
  private readonly contexts: Array<C | undefined> = [];
  private count = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Coarse time, advanced by the timer; read only while the timer runs. */
  private now = 0;

  constructor(
    /** 0: no limit. */
    public limitMs: number,
    /** Answers a request whose step overran and returns true, or returns false to give it the limit again. */
    private readonly expire: (request: R, context: C) => boolean,
    private readonly tickMs = 250,
    /** Monotonic: a wall clock set forward must not expire every waiting step at once. */
    private readonly clock: Clock = monotonicClock,
  ) {}

  /** Deadline of a step starting now. */
  deadline(): number {
    if (this.limitMs <= 0) return Infinity;
    this.start();
    return this.now + this.limitMs;
  }

  watch(request: R, context: C): void {
    if (request.watchIndex >= 0) {
      this.contexts[request.watchIndex] = context;
      return;
    }
    request.watchIndex = this.count;
    this.requests[this.count] = request;
    this.contexts[this.count] = context;
    this.count++;
    this.start();
  }

  private start(): void {
    if (this.timer) return;
    this.now = this.clock.now();
    this.timer = setInterval(() => this.sweep(), this.tickMs);
    this.timer.unref();
  }

  unwatch(request: R): void {
    const at = request.watchIndex;
    if (at < 0 || this.requests[at] !== request) return;
    request.watchIndex = -1;
    const last = --this.count;
    if (at !== last) {
      const moved = this.requests[last]!;
      this.requests[at] = moved;
      this.contexts[at] = this.contexts[last];
      moved.watchIndex = at;
    }
    this.requests[last] = undefined;
    this.contexts[last] = undefined;
  }

  /** Requests watched now (tests). */
  get size(): number {
    return this.count;
  }

  private sweep(): void {
    this.now = this.clock.now();
    // From the end: a removal moves the last request, already seen, into the hole.
    for (let i = this.count - 1; i >= 0; i--) {
      const request = this.requests[i];
      if (request === undefined || request.stepUntil > this.now) continue;
      if (this.expire(request, this.contexts[i]!)) this.unwatch(request);
      else request.stepUntil = this.deadline();
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    for (let i = 0; i < this.count; i++) this.requests[i]!.watchIndex = -1;
    this.requests.length = 0;
    this.contexts.length = 0;
    this.count = 0;
  }
}
