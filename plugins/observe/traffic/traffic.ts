import { tenantOf } from '../../../sdk/plugin/tenants.ts';
import type { Clock, Exchange, HookFn } from '../../../sdk/plugin/index.ts';
import { ChannelSeries, RecentRing, WINDOW_SECONDS, type ChannelStats, type RecentRequest } from './recorder.ts';
import type { RecentArgs, StatsArgs } from './schema.ts';

/**
 * Records every request a channel or plugin route answered. Per request: a few array writes at
 * onResponse, with the duration from the exchange's own timer (no onRequest step, no per-request
 * map entry); the hook functions are built once per channel and config, never per request.
 */
export class TrafficRecorder {
  private readonly ring: RecentRing;
  private readonly series = new Map<string, ChannelSeries>();

  constructor(
    capacity: number,
    private readonly clock: Clock,
  ) {
    this.ring = new RecentRing(capacity);
  }

  /** The onResponse step of one channel. */
  recorderFor(channel: string): HookFn {
    let series = this.series.get(channel);
    if (!series) this.series.set(channel, (series = new ChannelSeries(channel)));
    const target = series;
    return (ex) => this.record(target, ex);
  }

  private record(series: ChannelSeries, ex: Exchange): void {
    const ms = ex.elapsedMs ?? 0;
    const at = this.clock.now();
    // A dropped connection got no status at all: 0, so it is not taken for the draft's 200.
    const status = ex.dropped === true ? 0 : ex.response.status;
    this.ring.push(ex.cid, series.channel, ex.method, ex.path, status, ms, at);
    series.record(Math.floor(at / 1000), status, ms);
  }

  /** `tenant` given: that tenant's channels only. */
  recent(args: RecentArgs, tenant?: string): { last_seq: number; requests: RecentRequest[] } {
    return { last_seq: this.ring.last, requests: this.ring.list(args.after_seq ?? 0, args.channel, args.limit, tenant) };
  }

  stats(args: StatsArgs, tenant?: string): { seconds: number; step: number; channels: ChannelStats[] } {
    const now = Math.floor(this.clock.now() / 1000);
    const seconds = Math.min(args.seconds, WINDOW_SECONDS);
    const chosen = (args.channel === undefined ? [...this.series.values()] : [this.series.get(args.channel) ?? new ChannelSeries(args.channel)]).filter(
      (s) => tenant === undefined || tenantOf(s.channel) === tenant,
    );
    const channels = chosen.map((s) => s.summary(now, seconds, args.step)).filter((c) => args.channel !== undefined || c.totals.requests > 0);
    channels.sort((a, b) => a.channel.localeCompare(b.channel));
    return { seconds, step: args.step, channels };
  }
}
