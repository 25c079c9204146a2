/**
 * Waiting between connection attempts, as every connector that keeps a connection does it.
 */

/**
 * The wait before reconnect attempt `attempt` (1 for the first after a loss): exponential from
 * min_ms up to max_ms, with full jitter, but never under min_ms / 2, so a server that refuses at
 * once cannot make a hot loop.
 */
export function reconnectDelayMs(reconnect: { min_ms: number; max_ms: number }, attempt: number, random: () => number): number {
  const { min_ms, max_ms } = reconnect;
  const ceiling = Math.min(max_ms, min_ms * 2 ** Math.min(attempt - 1, 30));
  return Math.max(min_ms / 2, Math.round(random() * ceiling));
}

/** A wait that another part of the connector can cut short: shutdown, a new message, a lost lease. */
export class Nap {
  private wakeNow: (() => void) | undefined;

  /** Waits ms, or until `wake()`, or until `also` settles (a connection lost meanwhile). */
  sleep(ms: number, also?: Promise<unknown>): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wakeNow === done) this.wakeNow = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeNow = done;
      void also?.then(done, done);
    });
  }

  /** Ends the wait going on now, if any. */
  wake(): void {
    this.wakeNow?.();
  }
}
