import type { DeliverySettings } from './schema.ts';

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
