/**
 * How long one of a service's connector calls waits (for a connection, a free session, a
 * confirm): its connection's own limit, or what the calling service's time limit leaves it
 * (HostCallContext.timeLeftMs), the less; and how its error says which ended the wait. A wait
 * cut short ends with the connector's own error (ServiceUnavailable), which the service can
 * still catch, where waiting out its limit ended the call with SERVICE_TIMEOUT.
 */
export interface WaitLimit {
  ms: number;
  /** For the error's message: `within publish_timeout_ms (10000 ms)`, or `before the calling service's time limit (…)`. */
  within: string;
}

export function waitLimit(ownMs: number, ownSetting: string, timeLeftMs: number): WaitLimit {
  return timeLeftMs < ownMs ? { ms: timeLeftMs, within: `before the calling service's time limit (${timeLeftMs} ms left)` } : { ms: ownMs, within: `within ${ownSetting} (${ownMs} ms)` };
}

/**
 * `work`'s value, or `undefined` once `ms` passed first: the caller stops waiting, the work goes
 * on, and a value it yields later goes to `late` (a session back to its pool). A rejection
 * after the caller stopped waiting is dropped; one before is the caller's.
 */
export function settleWithin<T>(work: Promise<T>, ms: number, late: (value: T) => void): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve, reject) => {
    let waiting = true;
    const timer = setTimeout(() => {
      waiting = false;
      resolve(undefined);
    }, ms);
    work.then(
      (value) => {
        if (!waiting) return late(value);
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        if (!waiting) return;
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
