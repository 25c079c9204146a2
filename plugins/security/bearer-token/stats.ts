import type { TokenStats } from '../../capabilities.ts';

export type TokenOutcome = 'ok' | 'failed' | 'cancelled';

/** Token requests by definition and outcome since start: what the metrics plugin reads ('bearer-token.stats'). */
export class TokenRequestCounts {
  private readonly counts = new Map<string, number>();

  add(security: string, outcome: TokenOutcome): void {
    const key = `${outcome} ${security}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  stats(): TokenStats {
    return {
      requests: [...this.counts].map(([key, count]) => {
        const space = key.indexOf(' ');
        return { outcome: key.slice(0, space), security: key.slice(space + 1), count };
      }),
    };
  }
}
