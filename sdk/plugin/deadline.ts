/**
 * An abort signal for one attempt (an outgoing call, a token request): aborted when the caller's
 * signal aborts or when `ms` have passed, whichever comes first; `end()` once the attempt is
 * over, however it ended.
 *
 * What `AbortSignal.any([caller, AbortSignal.timeout(ms)])` does, without what that costs at
 * hundreds of calls a second: `AbortSignal.timeout`'s timer cannot be cleared, so each call's
 * timer, signal and, when it fires after the call has long ended, its TimeoutError stay for the
 * whole timeout; `AbortSignal.any` adds weak references, sets and a finalization record per call.
 * All of it outlives the kernel's young-generation collections and is copied and promoted:
 * under the tenants bench's outgoing call storm it was half of what survived them (bench/README.md,
 * Tenants, 2026-12-01). Here the timer is cleared and the caller's listener removed at `end()`.
 */
export class Deadline {
  /** Pass this to the attempt (undici's `signal`). */
  readonly signal: AbortSignal;
  /** Whether the time ran out (rather than the caller aborting). */
  timedOut = false;
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly caller: AbortSignal | undefined,
    ms: number,
  ) {
    this.signal = this.controller.signal;
    if (caller?.aborted) {
      this.controller.abort(caller.reason);
      return;
    }
    // The listener is this object (handleEvent): no closure per attempt.
    caller?.addEventListener('abort', this, { once: true });
    this.timer = setTimeout(expire, ms, this);
    // Like AbortSignal.timeout: the timer alone keeps no process alive.
    this.timer.unref();
  }

  /** The caller's signal aborted: so does the attempt, with the caller's reason. */
  handleEvent(): void {
    this.end();
    this.controller.abort(this.caller!.reason);
  }

  /** The attempt is over: the timer is cleared and the caller's signal let go. Idempotent. */
  end(): void {
    if (this.timer) clearTimeout(this.timer);
    this.caller?.removeEventListener('abort', this);
  }

  /** @internal the timer's callback (expire). */
  timeOut(): void {
    this.timedOut = true;
    this.caller?.removeEventListener('abort', this);
    // The reason AbortSignal.timeout gives.
    this.controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }
}

function expire(deadline: Deadline): void {
  deadline.timeOut();
}
