import { SvcError, type Clock } from '../../../sdk/plugin/index.ts';
import type { IssuedToken } from './token-request.ts';

/** Assumed validity of a token whose response has no expires_in (so it is cached half of it, 5 minutes). */
export const DEFAULT_VALIDITY_S = 600;
/**
 * Scope sets remembered per definition. Calls choose scopes (auth_scopes), so without a bound a
 * service could grow the cache without end; the oldest set is forgotten first.
 */
export const MAX_SCOPE_SETS = 256;

/** Fetches a token; the signal fires when every caller waiting for it has left. */
export type TokenFetcher = (scopes: readonly string[], signal: AbortSignal) => Promise<IssuedToken>;

interface Flight {
  promise: Promise<string>;
  controller: AbortController;
  waiters: number;
}

interface Slot {
  /** `Bearer <token>`, usable while both clocks are before their limit. */
  header: string | undefined;
  /** On the wall clock: it runs on while the machine is suspended, which the monotonic one does not. */
  freshUntil: number;
  /** On the monotonic clock: a wall clock set back does not move it. */
  freshUntilElapsed: number;
  flight: Flight | undefined;
}

/**
 * Tokens by definition key (its name and a digest of its fields) and scope set. At most one token
 * request per key is in flight; callers arriving meanwhile wait for it. A token is kept for half
 * its validity (spec); a failed request is not cached and fails everyone who waited for it.
 *
 * Validity is a duration (expires_in), measured on two clocks and over when either says so: the
 * wall clock (`clock`, the kernel's) keeps running through a suspend, the monotonic one
 * (`elapsed`) through the wall clock being set back. A clock set forward costs one token request.
 */
export class TokenCache {
  private readonly byDefinition = new Map<string, Map<string, Slot>>();

  constructor(
    private readonly clock: Clock,
    private readonly elapsed: () => number = () => performance.now(),
  ) {}

  /** The Authorization header value for the scope set, from the cache or a token request. */
  /** `waitMs`: the longest this caller waits for a token being fetched (OutgoingAuthContext.waitMs); then GATEWAY_TIMEOUT. */
  async header(definitionKey: string, scopes: readonly string[], fetch: TokenFetcher, signal: AbortSignal, waitMs = Infinity): Promise<string> {
    const scopeKey = scopeKeyOf(scopes);
    let slots = this.byDefinition.get(definitionKey);
    const slot = slots?.get(scopeKey);
    if (slot?.header !== undefined && this.clock.now() < slot.freshUntil && this.elapsed() < slot.freshUntilElapsed) return slot.header;
    signal.throwIfAborted();
    // A flight every caller left is being cancelled: a new caller needs a request of its own.
    if (slot?.flight !== undefined && !slot.flight.controller.signal.aborted) return join(slot.flight, signal, waitMs);

    if (slots === undefined) this.byDefinition.set(definitionKey, (slots = new Map()));
    const fresh: Slot = slot ?? { header: undefined, freshUntil: 0, freshUntilElapsed: 0, flight: undefined };
    if (slot === undefined) this.remember(slots, scopeKey, fresh);
    const startedAt = this.clock.now();
    const startedElapsed = this.elapsed();
    const controller = new AbortController();
    const flight: Flight = { controller, waiters: 0, promise: undefined as unknown as Promise<string> };
    flight.promise = fetch(scopes, controller.signal).then(
      (token) => {
        const header = `Bearer ${token.accessToken}`;
        if (fresh.flight === flight) {
          fresh.flight = undefined;
          // Counted from the request's start: the token's life began no earlier.
          const validityMs = (token.expiresIn ?? DEFAULT_VALIDITY_S) * 1000;
          if (this.byDefinition.get(definitionKey)?.get(scopeKey) === fresh) {
            fresh.header = header;
            fresh.freshUntil = startedAt + validityMs / 2;
            fresh.freshUntilElapsed = startedElapsed + validityMs / 2;
          }
        }
        return header;
      },
      (err: unknown) => {
        if (fresh.flight === flight) fresh.flight = undefined;
        throw err;
      },
    );
    // Waiters may all have left; the outcome must not become an unhandled rejection.
    flight.promise.catch(() => undefined);
    fresh.flight = flight;
    return join(flight, signal, waitMs);
  }

  /**
   * The upstream refused `header`: forget it unless a newer token replaced it already (many calls
   * refused at once must not throw away the token the first of them fetched).
   */
  refused(definitionKey: string, scopes: readonly string[], header: string | undefined): void {
    const slot = this.byDefinition.get(definitionKey)?.get(scopeKeyOf(scopes));
    if (slot !== undefined && slot.header !== undefined && slot.header === header) {
      slot.header = undefined;
      slot.freshUntil = 0;
      slot.freshUntilElapsed = 0;
    }
  }

  /** Drops every token of a definition; requests in flight finish for their callers, uncached. */
  forget(definitionKey: string): void {
    this.byDefinition.delete(definitionKey);
  }

  /** Keeps only the given definitions (the rest were edited or removed). */
  retain(definitionKeys: ReadonlySet<string>): void {
    for (const key of this.byDefinition.keys()) if (!definitionKeys.has(key)) this.byDefinition.delete(key);
  }

  clear(): void {
    this.byDefinition.clear();
  }

  private remember(slots: Map<string, Slot>, scopeKey: string, slot: Slot): void {
    slots.set(scopeKey, slot);
    if (slots.size <= MAX_SCOPE_SETS) return;
    for (const [key, old] of slots) {
      if (old.flight === undefined) {
        slots.delete(key);
        return;
      }
    }
  }
}

/** One key per scope set: order and repeats do not make another token. */
function scopeKeyOf(scopes: readonly string[]): string {
  return [...new Set(scopes)].sort().join(' ');
}

/**
 * Waits for a flight as one of its callers. A caller whose signal fires, or whose `waitMs` runs
 * out, stops waiting at once; when the last one leaves, the token request itself is cancelled.
 */
function join(flight: Flight, signal: AbortSignal, waitMs: number): Promise<string> {
  flight.waiters += 1;
  return new Promise<string>((resolve, reject) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      flight.waiters -= 1;
      signal.removeEventListener('abort', onAbort);
      clearTimeout(timer);
      return true;
    };
    const leave = (reason: unknown): void => {
      if (!finish()) return;
      if (flight.waiters === 0) flight.controller.abort();
      reject(reason);
    };
    const onAbort = (): void => leave(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    // The caller's own limit (its budget, its service's time limit): it stops waiting, the others go on.
    if (waitMs !== Infinity) timer = setTimeout(() => leave(new SvcError('GATEWAY_TIMEOUT', `No bearer token within the ${waitMs} ms the call had left to wait`)), waitMs);
    flight.promise.then(
      (header) => finish() && resolve(header),
      (err: unknown) => finish() && reject(err),
    );
  });
}
