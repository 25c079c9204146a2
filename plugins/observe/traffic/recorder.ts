import { tenantOf } from '../../../sdk/plugin/tenants.ts';

/**
 * What the traffic plugin keeps in memory: the last requests in a ring, and per channel one
 * slot per second for the last WINDOW_SECONDS. Both are preallocated arrays written in place,
 * so recording a request allocates nothing.
 */

export const WINDOW_SECONDS = 900;

/** One recorded request as the ops return it. No query string, headers or body: they may hold secrets. */
export interface RecentRequest {
  seq: number;
  cid: string;
  channel: string;
  method: string;
  path: string;
  /** 0: the connection was dropped without a response (firewall). */
  status: number;
  ms: number;
  /** Milliseconds since the epoch when the response was done. */
  at: number;
}

/** Paths beyond this are cut: enough to recognise a request, bounded in memory. */
const MAX_PATH = 512;

export class RecentRing {
  /** Requests recorded since start; the newest has this seq. */
  last = 0;
  private readonly cids: string[];
  private readonly channels: string[];
  private readonly methods: string[];
  private readonly paths: string[];
  private readonly statuses: Uint16Array;
  private readonly durations: Float64Array;
  private readonly times: Float64Array;

  constructor(readonly capacity: number) {
    this.cids = new Array<string>(capacity).fill('');
    this.channels = new Array<string>(capacity).fill('');
    this.methods = new Array<string>(capacity).fill('');
    this.paths = new Array<string>(capacity).fill('');
    this.statuses = new Uint16Array(capacity);
    this.durations = new Float64Array(capacity);
    this.times = new Float64Array(capacity);
  }

  push(cid: string, channel: string, method: string, path: string, status: number, ms: number, at: number): void {
    const i = this.last % this.capacity;
    this.last++;
    this.cids[i] = cid;
    this.channels[i] = channel;
    this.methods[i] = method;
    this.paths[i] = path.length > MAX_PATH ? path.slice(0, MAX_PATH) : path;
    this.statuses[i] = status;
    this.durations[i] = ms;
    this.times[i] = at;
  }

  /** Newest first: requests with a seq above afterSeq (all held ones when 0), of one channel or all (of one tenant's channels when given), at most limit. */
  list(afterSeq: number, channel: string | undefined, limit: number, tenant?: string): RecentRequest[] {
    const out: RecentRequest[] = [];
    const oldest = Math.max(afterSeq, this.last - this.capacity) + 1;
    for (let seq = this.last; seq >= oldest && out.length < limit; seq--) {
      const i = (seq - 1) % this.capacity;
      if (channel !== undefined && this.channels[i] !== channel) continue;
      if (tenant !== undefined && tenantOf(this.channels[i]!) !== tenant) continue;
      out.push({
        seq,
        cid: this.cids[i]!,
        channel: this.channels[i]!,
        method: this.methods[i]!,
        path: this.paths[i]!,
        status: this.statuses[i]!,
        ms: Math.round(this.durations[i]! * 100) / 100,
        at: this.times[i]!,
      });
    }
    return out;
  }
}

/** One channel's per-second counters over the window; slot = second % WINDOW_SECONDS. */
export class ChannelSeries {
  private readonly seconds = new Float64Array(WINDOW_SECONDS).fill(-1);
  private readonly requests = new Uint32Array(WINDOW_SECONDS);
  private readonly clientErrors = new Uint32Array(WINDOW_SECONDS);
  private readonly serverErrors = new Uint32Array(WINDOW_SECONDS);
  private readonly msSum = new Float64Array(WINDOW_SECONDS);

  constructor(readonly channel: string) {}

  record(second: number, status: number, ms: number): void {
    const i = second % WINDOW_SECONDS;
    if (this.seconds[i] !== second) {
      this.seconds[i] = second;
      this.requests[i] = 0;
      this.clientErrors[i] = 0;
      this.serverErrors[i] = 0;
      this.msSum[i] = 0;
    }
    this.requests[i]!++;
    if (status >= 500) this.serverErrors[i]!++;
    else if (status >= 400) this.clientErrors[i]!++;
    this.msSum[i] += ms;
  }

  /**
   * The last `seconds` seconds up to and including `nowSecond`, in buckets of `step` seconds,
   * oldest first. Seconds nothing was recorded in count as zero.
   */
  summary(nowSecond: number, seconds: number, step: number): ChannelStats {
    const buckets = Math.ceil(seconds / step);
    const first = nowSecond - buckets * step + 1;
    const series: Series = { start: first * 1000, step, rate: [], errors_4xx: [], errors_5xx: [], mean_ms: [] };
    const totals = { requests: 0, errors_4xx: 0, errors_5xx: 0, ms: 0 };
    for (let b = 0; b < buckets; b++) {
      let requests = 0;
      let e4 = 0;
      let e5 = 0;
      let ms = 0;
      for (let s = first + b * step; s < first + (b + 1) * step; s++) {
        const i = s % WINDOW_SECONDS;
        if (s < 0 || this.seconds[i] !== s) continue;
        requests += this.requests[i]!;
        e4 += this.clientErrors[i]!;
        e5 += this.serverErrors[i]!;
        ms += this.msSum[i]!;
      }
      series.rate.push(round(requests / step));
      series.errors_4xx.push(e4);
      series.errors_5xx.push(e5);
      series.mean_ms.push(requests ? round(ms / requests) : null);
      totals.requests += requests;
      totals.errors_4xx += e4;
      totals.errors_5xx += e5;
      totals.ms += ms;
    }
    const span = buckets * step;
    return {
      channel: this.channel,
      totals: {
        requests: totals.requests,
        errors_4xx: totals.errors_4xx,
        errors_5xx: totals.errors_5xx,
        rate: round(totals.requests / span),
        mean_ms: totals.requests ? round(totals.ms / totals.requests) : null,
      },
      series,
    };
  }
}

/** A channel's figures over a window. Series are columns: bucket k starts at `start + k * step` seconds. */
export interface ChannelStats {
  channel: string;
  totals: { requests: number; errors_4xx: number; errors_5xx: number; rate: number; mean_ms: number | null };
  series: Series;
}

export interface Series {
  /** Milliseconds since the epoch of the first bucket's first second. */
  start: number;
  /** Seconds per bucket. */
  step: number;
  /** Requests per second, averaged over the bucket. */
  rate: number[];
  errors_4xx: number[];
  errors_5xx: number[];
  /** Mean duration in milliseconds; null for a bucket without requests. */
  mean_ms: Array<number | null>;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
