import type { RateLimitStats } from '../capabilities.ts';

/** Requests refused (429) and connections dropped, by channel since start, and Redis failures: what the metrics plugin reads ('rate-limit.stats'). */
export class Refusals {
  private readonly denials = new Map<string, number>();
  private readonly drops = new Map<string, number>();
  private readonly redisErrors = new Map<string, number>();

  denied(channel: string): void {
    this.denials.set(channel, (this.denials.get(channel) ?? 0) + 1);
  }

  dropped(channel: string): void {
    this.drops.set(channel, (this.drops.get(channel) ?? 0) + 1);
  }

  /** on_redis_error decided (allow or deny) because Redis could not. */
  redisError(outcome: string): void {
    this.redisErrors.set(outcome, (this.redisErrors.get(outcome) ?? 0) + 1);
  }

  stats(): RateLimitStats {
    return {
      denials: [...this.denials].map(([channel, count]) => ({ channel, count })),
      drops: [...this.drops].map(([channel, count]) => ({ channel, count })),
      redisErrors: [...this.redisErrors].map(([outcome, count]) => ({ outcome, count })),
    };
  }
}
