import type { RetryPolicy } from './schema.ts';

/** Full jitter (a random wait up to the exponential step): retries of many callers spread out. */
export function backoffMs(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
  const step = Math.min(policy.max_backoff_ms, policy.base_backoff_ms * 2 ** retry);
  return Math.floor(random() * step);
}

/** `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3), in ms from now; undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now: number): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Methods RFC 9110 defines as idempotent: a repeat after a timeout cannot do the work twice. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** A timed-out call may be repeated when its method is idempotent or it carries an idempotency key. */
export function safeToRepeat(method: string, headers: Record<string, string>): boolean {
  return IDEMPOTENT.has(method) || headers['idempotency-key'] !== undefined;
}
