/**
 * A repeating timer that runs only as often as its owner has something to watch, and not at all
 * when it has nothing. Each tick says how soon it wants the next one (0: none until `atMost` is
 * called again); `atMost(ms)` makes it tick at least that often from now on.
 *
 * Why: a sweep that runs every 20 or 50 ms whether or not a call is in flight wakes an idle
 * process 20–50 times a second. Before this, an idle server with two sandbox processes used 2.8 %
 * of a core doing nothing, and each tenant's processes of their own added 0.55 % each (bench/README.md,
 * "Idle"). The sweeps' precision while there is work is unchanged: the first tick after `atMost`
 * comes `ms` later, as it would have at the latest before.
 *
 * The timer is unref'd: it never keeps a process alive on its own.
 */
export class Ticker {
  private timer: NodeJS.Timeout | undefined;
  /** The period the timer runs at; 0 while it is stopped. */
  private periodMs = 0;

  constructor(
    /** Does the work of one tick; returns the period wanted from now on, 0 to stop. */
    private readonly tick: () => number,
  ) {}

  /** How often it ticks now (ms); 0 while stopped. For tests and diagnostics. */
  get everyMs(): number {
    return this.periodMs;
  }

  /** Ticks at least every `ms` from now on: starts a stopped timer, speeds up a slower one. */
  atMost(ms: number): void {
    if (this.periodMs !== 0 && this.periodMs <= ms) return;
    this.run(ms);
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.periodMs = 0;
  }

  private run(ms: number): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.periodMs = ms;
    this.timer = setInterval(this.fire, ms);
    this.timer.unref();
  }

  private readonly fire = (): void => {
    const before = this.periodMs;
    const next = this.tick();
    // A tick that stopped it or called atMost has set the timer already.
    if (this.periodMs !== before || next === before) return;
    if (next > 0) this.run(next);
    else this.stop();
  };
}
