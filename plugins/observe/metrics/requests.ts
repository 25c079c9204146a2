import type { Exchange, HookFn } from '../../../sdk/plugin/index.ts';

/** One channel's (or plugin route's) requests: counts by status and a duration histogram, plain numbers. */
export interface ChannelMeter {
  channel: string;
  /** Status → requests; 0 is a connection dropped without an answer. */
  statuses: Map<number, number>;
  /** Per bucket (not cumulative), the last one +Inf. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * The per-request part of the metrics: one map increment and one bucket increment per request,
 * in a step built once per channel and config. Prometheus reads the numbers when it scrapes.
 */
export class RequestMeters {
  private readonly meters = new Map<string, ChannelMeter>();

  constructor(readonly bounds: readonly number[]) {}

  /** The onResponse step of one channel; channels keep their meter across config reloads. */
  recorderFor(channel: string): HookFn {
    let meter = this.meters.get(channel);
    if (!meter) this.meters.set(channel, (meter = { channel, statuses: new Map(), buckets: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 }));
    const m = meter;
    const bounds = this.bounds;
    const last = bounds.length;
    return function countRequest(ex: Exchange): void {
      const status = ex.dropped === true ? 0 : ex.response.status;
      m.statuses.set(status, (m.statuses.get(status) ?? 0) + 1);
      const seconds = (ex.elapsedMs ?? 0) / 1000;
      let i = 0;
      while (i < last && seconds > bounds[i]!) i++;
      m.buckets[i]!++;
      m.sum += seconds;
      m.count++;
    };
  }

  all(): Iterable<ChannelMeter> {
    return this.meters.values();
  }
}
