/** Upper bounds of the lateness histogram, milliseconds (how long after its time a tick was taken). */
export const LATENESS_BUCKETS_MS = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 60_000] as const;

/**
 * What this node's scheduler counted since it started (the metrics plugin reads it): runs by job
 * and how they ended, and how late ticks were taken.
 */
export class SchedulerStats {
  private readonly runs = new Map<string, number>();
  /** Counts per bucket (cumulative buckets are the reader's), then the overflow. */
  readonly buckets = new Array<number>(LATENESS_BUCKETS_MS.length + 1).fill(0);
  sumMs = 0;
  taken = 0;

  count(job: string, outcome: string): void {
    const key = `${job}\0${outcome}`;
    this.runs.set(key, (this.runs.get(key) ?? 0) + 1);
  }

  lateness(ms: number): void {
    const late = Math.max(0, ms);
    let i = 0;
    while (i < LATENESS_BUCKETS_MS.length && late > LATENESS_BUCKETS_MS[i]!) i++;
    this.buckets[i]!++;
    this.sumMs += late;
    this.taken++;
  }

  runsNow(): Array<{ job: string; outcome: string; count: number }> {
    return [...this.runs].map(([key, count]) => {
      const [job, outcome] = key.split('\0') as [string, string];
      return { job, outcome, count };
    });
  }
}
