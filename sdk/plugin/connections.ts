import type { Clock } from './clock.ts';

/**
 * Connections that connector plugins keep open to the outside (a database pool, a broker link),
 * as the health and metrics plugins read them: `KernelApi.addConnections` registers a reporter,
 * `KernelApi.connections()` reads every reporter's connections now. SDK 1.8.
 *
 * The kernel knows no connector by name: to it a report is data with a `kind` string.
 */
export interface ConnectionReport {
  /** The connector, e.g. `sql`, `amqp`, `mqtt`. */
  kind: string;
  /** The connection's (or inbound channel's) name in the config. */
  name: string;
  /** Inbound (`channel`: it consumes and runs services) or outgoing (`connection`: services call it). */
  role: 'connection' | 'channel';
  /**
   * `up`: usable now; `connecting`: first connect or reconnecting after a loss; `down`: failing
   * (`reason` says why); `idle`: not opened yet (connections open on first use).
   */
  state: 'up' | 'connecting' | 'down' | 'idle';
  /** Why not up: short and safe to show anyone (no addresses with credentials, no secrets). */
  reason?: string;
  /** /ready answers 503 while it is not up (`ready_check: true` in its config). */
  readyCheck: boolean;
  /** Counts and latencies since start, as ConnectionMeter keeps them. */
  meter: ConnectionMeterView;
  /** Pool occupancy, for connectors with pools (SQL). */
  pool?: { size: number; busy: number; idle: number; waiting: number };
}

/** A read-only view of a ConnectionMeter. */
export interface ConnectionMeterView {
  /** Operations by name (`query`, `publish`, `consume`...) and outcome (`ok`, `error`, or a connector's own: `dead_letter`). */
  readonly counts: ReadonlyMap<string, number>;
  /** Histogram of operation durations in seconds: counts per bucket (not cumulative), with LATENCY_BOUNDS_S. */
  readonly buckets: ArrayLike<number>;
  readonly sumSeconds: number;
  readonly timed: number;
  /** Times the connection was lost and opened again. */
  readonly reconnects: number;
}

/** Upper bounds (seconds) of the latency buckets every connector shares. */
export const LATENCY_BOUNDS_S: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The key of `counts`: operation and outcome, as `operation outcome`. */
export function countKey(operation: string, outcome: string): string {
  return `${operation} ${outcome}`;
}

/**
 * Counts and times a connection's operations where they happen, allocation-light: one Map entry
 * per (operation, outcome) pair, a fixed bucket array. Durations read the clock given (monotonic).
 */
export class ConnectionMeter implements ConnectionMeterView {
  readonly counts = new Map<string, number>();
  readonly buckets = new Float64Array(LATENCY_BOUNDS_S.length);
  sumSeconds = 0;
  timed = 0;
  reconnects = 0;

  constructor(private readonly clock: Pick<Clock, 'now'>) {}

  /** A start time to pass to `done`. */
  start(): number {
    return this.clock.now();
  }

  /** Counts one operation and, when `startedAt` is given, its duration. */
  done(operation: string, outcome: string, startedAt?: number): void {
    const key = countKey(operation, outcome);
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    if (startedAt === undefined) return;
    const seconds = Math.max(0, this.clock.now() - startedAt) / 1000;
    this.sumSeconds += seconds;
    this.timed++;
    for (let i = 0; i < LATENCY_BOUNDS_S.length; i++) {
      if (seconds <= (LATENCY_BOUNDS_S[i] as number)) {
        (this.buckets as Float64Array)[i]++;
        return;
      }
    }
  }

  /** Counts what `run` does: ok when it resolves, error when it rejects (rethrown). */
  async time<T>(operation: string, run: () => Promise<T>): Promise<T> {
    const at = this.start();
    try {
      const value = await run();
      this.done(operation, 'ok', at);
      return value;
    } catch (err) {
      this.done(operation, 'error', at);
      throw err;
    }
  }
}
