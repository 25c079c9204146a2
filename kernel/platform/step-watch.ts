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
export class StepWatch<R extends { stepUntil: number }, C> {
  private readonly waiting = new Map<R, C>();
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
    this.waiting.set(request, context);
    this.start();
  }

  private start(): void {
    if (this.timer) return;
    this.now = this.clock.now();
    this.timer = setInterval(() => this.sweep(), this.tickMs);
    this.timer.unref();
  }

  unwatch(request: R): void {
    this.waiting.delete(request);
  }

  private sweep(): void {
    this.now = this.clock.now();
    for (const [request, context] of this.waiting) {
      if (request.stepUntil > this.now) continue;
      if (this.expire(request, context)) this.waiting.delete(request);
      else request.stepUntil = this.deadline();
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.waiting.clear();
  }
}
