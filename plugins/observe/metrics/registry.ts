import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import { LATENCY_BOUNDS_S, type ConnectionReport, type KernelApi } from '../../../sdk/plugin/index.ts';
import { tenantOf } from '../../../sdk/plugin/tenants.ts';
import type { CacheStats, OutgoingStats, PubSubStats, RateLimitStats, ResponseCacheStats, SchedulerStatsView, TokenStats, UseQueueStats } from '../../capabilities.ts';
import type { RequestMeters } from './requests.ts';

/** What one scrape reads, gathered once before the series are written. */
interface Snapshot {
  sandbox: ReturnType<KernelApi['sandboxStats']>;
  queues: UseQueueStats | undefined;
  rateLimit: RateLimitStats | undefined;
  outgoing: OutgoingStats | undefined;
  tokens: TokenStats | undefined;
  pubsub: PubSubStats | undefined;
  scheduler: SchedulerStatsView | undefined;
  caches: CacheStats | undefined;
  responseCache: ResponseCacheStats | undefined;
  connections: ConnectionReport[];
}

/** The background queue (invokeAsync) has no channel: its `queue` label. */
export const BACKGROUND_QUEUE = '@background';

/**
 * The `tenant` label of a service's series: its tenant, or empty for the platform's own. Empty,
 * not a word: any word could be a tenant's name, and Prometheus reads an empty label as none, so
 * `{tenant=""}` selects the platform's series and `sum by (tenant)` keeps them apart.
 */
export function tenantLabel(service: string): string {
  return tenantOf(service) ?? '';
}

type Labels = Record<string, string | number>;
type Row = { labels: Labels; value: number };

/**
 * The series svc serves at /metrics. Nothing is counted here: every value is read at scrape time
 * from numbers kept where the facts happen (the request meters, the kernel's sandbox stats,
 * other plugins' stats capabilities), so a request costs what RequestMeters costs and no more.
 */
export class SvcMetrics {
  private readonly registry = new Registry();
  private snapshot: Snapshot | undefined;

  constructor(
    private readonly kernel: KernelApi,
    requests: RequestMeters,
    private readonly processMetrics: boolean,
  ) {
    // Started now, so the first scrape already has event loop and GC figures.
    if (processMetrics) processRegistry();
    const r = this.registry;
    this.counter('svc_http_requests_total', 'Requests answered by channel (or plugin route) and status; status 0: connection dropped by the firewall.', ['channel', 'status'], () =>
      [...requests.all()].flatMap((m) => [...m.statuses].map(([status, value]) => ({ labels: { channel: m.channel, status }, value }))),
    );
    r.registerMetric(requestDurations(requests) as unknown as Metric);
    this.counter(
      'svc_sandbox_calls_total',
      'Service calls by service (its tenant; empty for the platform) and outcome (ok, error, timeout, memory_limit, crashed, quarantined, unavailable, tenant_quota, ...).',
      ['service', 'tenant', 'outcome'],
      (s) => s.sandbox.calls.map((c) => ({ labels: { service: c.service, tenant: tenantLabel(c.service), outcome: c.outcome }, value: c.count })),
    );
    this.counter('svc_sandbox_isolate_rebuilds_total', 'Isolates rebuilt after a time or memory limit disposed them, by service (and its tenant).', ['service', 'tenant'], (s) =>
      s.sandbox.isolateRebuilds.map((c) => ({ labels: { service: c.service, tenant: tenantLabel(c.service) }, value: c.count })),
    );
    this.counter(
      'svc_sandbox_isolate_rebuild_wait_seconds_total',
      "Time isolate rebuilds waited their tenant's turn because its isolates kept meeting their memory limit, by service (and its tenant).",
      ['service', 'tenant'],
      (s) => s.sandbox.isolateRebuilds.map((c) => ({ labels: { service: c.service, tenant: tenantLabel(c.service) }, value: c.waitedMs / 1000 })),
    );
    const tenants = (s: Snapshot) => s.sandbox.tenants;
    this.counter("svc_tenant_cpu_seconds_total", "CPU the tenant's services used in the sandbox processes of this node (their processes' CPU, divided by the time each service's isolates ran).", ['tenant'], (s) =>
      tenants(s).map((t) => ({ labels: { tenant: t.tenant }, value: t.cpuMs / 1000 })),
    );
    this.gauge('svc_tenant_calls_in_flight', "The tenant's calls running or waiting for a sandbox now, as its concurrent_calls quota counts them (the calls they invoke are not counted).", ['tenant'], (s) =>
      tenants(s).map((t) => ({ labels: { tenant: t.tenant }, value: t.inFlight })),
    );
    this.counter('svc_tenant_throttled_total', "The tenant's calls and publishes refused 429 TENANT_QUOTA, by quota (cpu_ms_per_minute, concurrent_calls, outgoing_calls_per_minute, queued_events, publishes_per_second, pubsub_bytes).", ['tenant', 'quota'], (s) =>
      tenants(s).flatMap((t) => Object.entries(t.throttled).map(([quota, value]) => ({ labels: { tenant: t.tenant, quota }, value }))),
    );
    this.counter('svc_sandbox_process_restarts_total', 'Sandbox processes started again after dying.', [], (s) => [{ labels: {}, value: s.sandbox.processRestarts }]);
    this.gauge('svc_sandbox_processes', 'Sandbox processes alive.', [], (s) => [{ labels: {}, value: s.sandbox.processes }]);
    this.gauge('svc_sandbox_quarantined_services', 'Services quarantined after crashing their sandbox process repeatedly.', [], (s) => [{ labels: {}, value: s.sandbox.quarantined.length }]);
    const queue = (channel: string | null) => channel ?? BACKGROUND_QUEUE;
    this.gauge('svc_queue_depth', `Use queue events accepted and not finished (pending and running), by queue (a channel's name; ${BACKGROUND_QUEUE}: invokeAsync work).`, ['queue'], (s) =>
      (s.queues?.queues ?? []).map((q) => ({ labels: { queue: queue(q.channel) }, value: q.depth })),
    );
    this.gauge('svc_queue_running', 'Use queue attempts running now, by queue.', ['queue'], (s) => (s.queues?.queues ?? []).map((q) => ({ labels: { queue: queue(q.channel) }, value: q.running })));
    this.gauge('svc_queue_dead_letters', 'Events in the Use queue dead-letter queue, by queue.', ['queue'], (s) =>
      (s.queues?.queues ?? []).map((q) => ({ labels: { queue: queue(q.channel) }, value: q.deadLetters })),
    );
    this.counter('svc_rate_limit_denials_total', 'Requests refused with 429 by rate limits, by channel.', ['channel'], (s) =>
      (s.rateLimit?.denials ?? []).map((d) => ({ labels: { channel: d.channel }, value: d.count })),
    );
    this.counter('svc_rate_limit_drops_total', 'Connections dropped by a disallowed range (IP firewall), by channel.', ['channel'], (s) =>
      (s.rateLimit?.drops ?? []).map((d) => ({ labels: { channel: d.channel }, value: d.count })),
    );
    this.counter('svc_rate_limit_redis_errors_total', 'Rate-limit decisions that on_redis_error took because Redis could not answer (redis policy), by outcome (allow, deny).', ['outcome'], (s) =>
      (s.rateLimit?.redisErrors ?? []).map((e) => ({ labels: { outcome: e.outcome }, value: e.count })),
    );
    this.counter('svc_outgoing_requests_total', 'Outgoing calls services made, by connection and final status (HTTP status, or timeout, connection, budget, cancelled, too_large, refused).', ['connection', 'status'], (s) =>
      (s.outgoing?.calls ?? []).map((c) => ({ labels: { connection: c.connection, status: c.status }, value: c.count })),
    );
    this.counter('svc_oauth_token_requests_total', 'OAuth 2.0 token requests (fetches and refreshes) for outgoing calls, by bearer_token definition and outcome.', ['security', 'outcome'], (s) =>
      (s.tokens?.requests ?? []).map((t) => ({ labels: { security: t.security, outcome: t.outcome }, value: t.count })),
    );
    this.counter('svc_scheduler_runs_total', 'Scheduled job runs this node saw end or decline, by job and outcome (succeeded, failed, skipped, missed).', ['job', 'outcome'], (s) =>
      (s.scheduler?.runs ?? []).map((c) => ({ labels: { job: c.job, outcome: c.outcome }, value: c.count })),
    );
    r.registerMetric(schedulerLateness(() => this.snapshot?.scheduler) as unknown as Metric);
    this.gauge('svc_pubsub_subscription_depth', 'Messages queued for a pub/sub subscription, by endpoint and topic.', ['endpoint', 'topic'], (s) =>
      (s.pubsub?.subscriptions ?? []).map((q) => ({ labels: { endpoint: q.endpoint, topic: q.topic }, value: q.depth })),
    );
    const caches = (s: Snapshot) => s.caches?.caches ?? [];
    this.counter('svc_cache_hits_total', "Services' gets that found a value, by named cache.", ['cache'], (s) => caches(s).map((c) => ({ labels: { cache: c.cache }, value: c.hits })));
    this.counter('svc_cache_misses_total', "Services' gets that found none, by named cache.", ['cache'], (s) => caches(s).map((c) => ({ labels: { cache: c.cache }, value: c.misses })));
    this.gauge('svc_cache_entries', 'Entries a memory cache holds now, by named cache.', ['cache'], (s) => caches(s).flatMap((c) => (c.entries === undefined ? [] : [{ labels: { cache: c.cache }, value: c.entries }])));
    this.gauge('svc_cache_bytes', 'Bytes (keys and values) a memory cache holds now, by named cache.', ['cache'], (s) => caches(s).flatMap((c) => (c.bytes === undefined ? [] : [{ labels: { cache: c.cache }, value: c.bytes }])));
    this.connectorSeries();
    this.counter('svc_response_cache_requests_total', 'GET and HEAD requests on channels with response_cache, by channel and result (HIT, MISS, BYPASS).', ['channel', 'result'], (s) =>
      (s.responseCache?.requests ?? []).map((r) => ({ labels: { channel: r.channel, result: r.result }, value: r.count })),
    );
  }

  /** Connectors' connections and inbound channels (kernel.connections()): state, operations, latency, pools. */
  private connectorSeries(): void {
    const conns = (s: Snapshot) => s.connections;
    const id = (c: ConnectionReport) => ({ kind: c.kind, connection: c.name });
    this.gauge('svc_connector_up', 'Whether a connector connection or inbound channel is up (1) or not (0), by kind (sql, amqp, mqtt) and name.', ['kind', 'connection'], (s) =>
      conns(s).map((c) => ({ labels: id(c), value: c.state === 'up' ? 1 : 0 })),
    );
    this.counter('svc_connector_operations_total', 'Operations on connector connections (query, transaction, publish; consume for inbound channels), by kind, name, operation and outcome.', ['kind', 'connection', 'operation', 'outcome'], (s) =>
      conns(s).flatMap((c) =>
        [...c.meter.counts].map(([key, value]) => {
          const space = key.indexOf(' ');
          return { labels: { ...id(c), operation: key.slice(0, space), outcome: key.slice(space + 1) }, value };
        }),
      ),
    );
    this.counter('svc_connector_reconnects_total', 'Times a connector connection was lost and opened again.', ['kind', 'connection'], (s) => conns(s).map((c) => ({ labels: id(c), value: c.meter.reconnects })));
    this.gauge('svc_connector_pool_connections', 'Connections of a SQL pool, by state (busy, idle) and requests waiting for one (waiting).', ['kind', 'connection', 'state'], (s) =>
      conns(s).flatMap((c) =>
        c.pool
          ? [
              { labels: { ...id(c), state: 'busy' }, value: c.pool.busy },
              { labels: { ...id(c), state: 'idle' }, value: c.pool.idle },
              { labels: { ...id(c), state: 'waiting' }, value: c.pool.waiting },
            ]
          : [],
      ),
    );
    this.registry.registerMetric(
      histogram('svc_connector_operation_duration_seconds', 'How long connector operations took, by kind and name.', () =>
        (this.snapshot?.connections ?? []).map((c) => ({ labels: id(c), bounds: LATENCY_BOUNDS_S, buckets: c.meter.buckets, sum: c.meter.sumSeconds, count: c.meter.timed })),
      ) as unknown as Metric,
    );
  }

  /** The exposition text: these series, then the process's (unless turned off). */
  async scrape(): Promise<string> {
    const k = this.kernel;
    const queues = k.lookup('use-queue.stats');
    this.snapshot = {
      sandbox: k.sandboxStats(),
      queues: queues && (await queues()),
      rateLimit: k.lookup('rate-limit.stats')?.(),
      outgoing: k.lookup('outgoing-rest.stats')?.(),
      tokens: k.lookup('bearer-token.stats')?.(),
      pubsub: await k.lookup('pubsub.stats')?.(),
      scheduler: k.lookup('scheduler.stats')?.(),
      caches: k.lookup('cache.stats')?.(),
      responseCache: k.lookup('response-cache.stats')?.(),
      connections: k.connections(),
    };
    // Every collect below is synchronous: one scrape's series all come from this snapshot.
    const own = await this.registry.metrics();
    return this.processMetrics ? own + '\n' + (await processRegistry().metrics()) : own;
  }

  private counter(name: string, help: string, labelNames: string[], rows: (s: Snapshot) => Row[]): void {
    const self = this;
    new Counter({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        if (self.snapshot) for (const row of rows(self.snapshot)) this.inc(row.labels, row.value);
      },
    });
  }

  private gauge(name: string, help: string, labelNames: string[], rows: (s: Snapshot) => Row[]): void {
    const self = this;
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        if (self.snapshot) for (const row of rows(self.snapshot)) this.set(row.labels, row.value);
      },
    });
  }
}

/** One labelled series of a histogram kept elsewhere: counts per bucket (not cumulative), their sum and count. */
interface HistogramSeries {
  labels: Labels;
  /** Upper bounds, in the metric's unit; `buckets[i]` counts values in (bounds[i-1], bounds[i]]. */
  bounds: readonly number[];
  buckets: ArrayLike<number>;
  sum: number;
  count: number;
}

/**
 * A histogram written from counts kept where the facts happen, per scrape: prom-client's
 * Histogram would hash the labels on every observe (about 1 µs a request).
 */
function histogram(name: string, help: string, series: () => Iterable<HistogramSeries>) {
  return {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    async get() {
      const values: Array<{ labels: Labels; value: number; metricName: string }> = [];
      for (const s of series()) {
        let cumulative = 0;
        s.bounds.forEach((bound, i) => {
          cumulative += s.buckets[i] ?? 0;
          values.push({ labels: { ...s.labels, le: bound }, value: cumulative, metricName: `${name}_bucket` });
        });
        values.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${name}_bucket` });
        values.push({ labels: s.labels, value: s.sum, metricName: `${name}_sum` });
        values.push({ labels: s.labels, value: s.count, metricName: `${name}_count` });
      }
      return { name, help, type: 'histogram', aggregator: 'sum', values };
    },
  };
}

/** svc_http_request_duration_seconds from the request meters' own buckets. */
function requestDurations(requests: RequestMeters) {
  return histogram('svc_http_request_duration_seconds', 'Time from a request’s arrival to its answer, by channel (or plugin route).', function* () {
    for (const m of requests.all()) yield { labels: { channel: m.channel }, bounds: requests.bounds, buckets: m.buckets, sum: m.sum, count: m.count };
  });
}

/** svc_scheduler_lateness_seconds: how long after its time each tick was taken on this node. */
function schedulerLateness(read: () => SchedulerStatsView | undefined) {
  return histogram('svc_scheduler_lateness_seconds', 'How long after its time (tick + jitter) this node took each scheduled tick.', function* () {
    const s = read();
    if (s) yield { labels: {}, bounds: s.latenessBoundsMs.map((ms) => ms / 1000), buckets: s.lateness.buckets, sum: s.lateness.sumMs / 1000, count: s.lateness.taken };
  });
}

/**
 * Node's process metrics, once per process: prom-client's collectors (an event loop delay
 * monitor, a GC observer) run for the process's life and offer no way to stop them.
 */
let processMetricsRegistry: Registry | undefined;
function processRegistry(): Registry {
  if (!processMetricsRegistry) {
    processMetricsRegistry = new Registry();
    collectDefaultMetrics({ register: processMetricsRegistry });
  }
  return processMetricsRegistry;
}
