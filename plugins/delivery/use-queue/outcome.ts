import { SvcError, type InvokeResult } from '../../../sdk/plugin/index.ts';
import type { DeliverySettings } from './schema.ts';

/**
 * What one attempt came to. `permanent`: running it again cannot help (the service refused the
 * event itself), so it goes to the dead-letter queue at once instead of being retried.
 */
export type Outcome = { ok: true } | { ok: false; permanent: boolean; kind: string; message: string };

/** Service errors that say the event is wrong, not that the moment was: a bad signature stays bad. */
const PERMANENT_KINDS: ReadonlySet<string> = new Set(['BadRequest', 'Unauthorized', 'Forbidden', 'NotFound', 'Conflict', 'MethodNotAllowed']);

export function outcomeOfResult(result: InvokeResult): Outcome {
  if (result.error) return { ok: false, permanent: PERMANENT_KINDS.has(result.error.kind), kind: result.error.kind, message: result.error.message };
  // A status the service set itself, without throwing, is read as HTTP reads it.
  if (result.status >= 500) return { ok: false, permanent: false, kind: `Status ${result.status}`, message: 'the service answered with a server error status' };
  if (result.status >= 400) return { ok: false, permanent: true, kind: `Status ${result.status}`, message: 'the service answered with a client error status' };
  return { ok: true };
}

/** The call did not complete: time or memory limit, sandbox crash, not deployed, quarantined... all retried. */
export function outcomeOfFailure(err: unknown): Outcome {
  if (err instanceof SvcError) return { ok: false, permanent: false, kind: err.code, message: err.details };
  return { ok: false, permanent: false, kind: 'Error', message: err instanceof Error ? err.message : String(err) };
}

/**
 * The wait after failed attempt `attempt` (1-based): base · 2^(attempt−1), at most max_delay_ms;
 * with jitter, a random wait between 0 and that ceiling (full jitter).
 */
export function backoffMs(settings: DeliverySettings, attempt: number, random: () => number): number {
  const ceiling = Math.min(settings.max_delay_ms, settings.base_delay_ms * 2 ** (attempt - 1));
  if (!settings.jitter) return ceiling;
  const r = Math.min(1, Math.max(0, random()));
  return Math.round(r * ceiling);
}
