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

/** Minutes of latency histograms kept per channel (the window, in whole minutes). */
const MINUTES = WINDOW_SECONDS / 60;
/**
 * Latency buckets of a minute's histogram: 0 under 1 ms, then b for [2^(b-1), 2^b) ms, the last
 * open-ended (past 2^18 ms, about 4 minutes). A percentile read from them is exact to the bucket
 * and interpolated within it: good to within its factor of 2, which is what a chart shows.
 */
const LATENCY_BUCKETS = 20;
const bucketOf = (ms: number) => (ms < 1 ? 0 : Math.min(LATENCY_BUCKETS - 1, Math.floor(Math.log2(ms)) + 1));
const bucketLow = (b: number) => (b === 0 ? 0 : 2 ** (b - 1));
const bucketHigh = (b: number) => 2 ** b;

/** The p-th percentile (0–1) of a summed histogram, interpolated in its bucket; null when empty. */
export function percentileOf(hist: ArrayLike<number>, p: number): number | null {
  let total = 0;
  for (let b = 0; b < hist.length; b++) total += hist[b]!;
  if (!total) return null;
  const rank = p * total;
  let below = 0;
  for (let b = 0; b < hist.length; b++) {
    const n = hist[b]!;
    if (below + n >= rank) return round(bucketLow(b) + ((rank - below) / n) * (bucketHigh(b) - bucketLow(b)));
    below += n;
  }
  return round(bucketHigh(hist.length - 1));
}

/** One channel's per-second counters over the window (slot = second % WINDOW_SECONDS), and a latency histogram per minute. */
export class ChannelSeries {
  private readonly seconds = new Float64Array(WINDOW_SECONDS).fill(-1);
  private readonly requests = new Uint32Array(WINDOW_SECONDS);
  private readonly clientErrors = new Uint32Array(WINDOW_SECONDS);
  private readonly serverErrors = new Uint32Array(WINDOW_SECONDS);
  private readonly msSum = new Float64Array(WINDOW_SECONDS);
  private readonly minutes = new Float64Array(MINUTES).fill(-1);
  private readonly latency = new Uint32Array(MINUTES * LATENCY_BUCKETS);

  constructor(readonly channel: string) {}

  record(second: number, status: number, ms: number): void {
    const minute = Math.floor(second / 60);
    const m = minute % MINUTES;
    if (this.minutes[m] !== minute) {
      this.minutes[m] = minute;
      this.latency.fill(0, m * LATENCY_BUCKETS, (m + 1) * LATENCY_BUCKETS);
    }
    this.latency[m * LATENCY_BUCKETS + bucketOf(ms)]!++;
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
    const counts: number[] = [];
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
      counts.push(requests);
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
    // p95 from the minutes' histograms: over the window's whole minutes, and per bucket when buckets are whole minutes.
    if (step % 60 === 0) {
      series.p95_ms = [];
      for (let b = 0; b < buckets; b++) series.p95_ms.push(counts[b] ? percentileOf(this.latencyOver(first + b * step, first + (b + 1) * step - 1), 0.95) : null);
    }
    return {
      channel: this.channel,
      totals: {
        requests: totals.requests,
        errors_4xx: totals.errors_4xx,
        errors_5xx: totals.errors_5xx,
        rate: round(totals.requests / span),
        mean_ms: totals.requests ? round(totals.ms / totals.requests) : null,
        p95_ms: totals.requests ? percentileOf(this.latencyOver(first, nowSecond), 0.95) : null,
      },
      series,
    };
  }

  /** The summed latency histogram of the minutes from `fromSecond` to `toSecond` (whole minutes: a minute partly in counts whole). */
  private latencyOver(fromSecond: number, toSecond: number): Uint32Array {
    const sum = new Uint32Array(LATENCY_BUCKETS);
    for (let minute = Math.floor(fromSecond / 60); minute <= Math.floor(toSecond / 60); minute++) {
      const m = minute % MINUTES;
      if (minute < 0 || this.minutes[m] !== minute) continue;
      for (let b = 0; b < LATENCY_BUCKETS; b++) sum[b] += this.latency[m * LATENCY_BUCKETS + b]!;
    }
    return sum;
  }
}

/** A channel's figures over a window. Series are columns: bucket k starts at `start + k * step` seconds. */
export interface ChannelStats {
  channel: string;
  /** `p95_ms`: the 95th percentile of the durations, over the window's whole minutes (a minute partly in it counts whole), to within its histogram bucket. */
  totals: { requests: number; errors_4xx: number; errors_5xx: number; rate: number; mean_ms: number | null; p95_ms: number | null };
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
  /** With a step of whole minutes: each bucket's 95th percentile duration (from the minutes' histograms); null without requests. */
  p95_ms?: Array<number | null>;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
