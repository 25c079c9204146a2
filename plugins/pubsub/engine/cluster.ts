import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { SvcError, type Clock, type DataStore, type Queryable, type TenantQuotaApi } from '../../../sdk/plugin/index.ts';
import type { PubSubDelivery, PubSubEndpointView, PubSubMessageView, PubSubPublishRequest } from '../../capabilities.ts';
import { topicTenant } from '../shared/patterns.ts';
import { toView } from '../shared/projection.ts';
import { newMsgId, newSubKey } from './ids.ts';
import { clampPriority, type Message, type ResourceSet, type SubscriptionSource, type TopicInfo } from './model.ts';
import { ResourceBook, subId } from './resources.ts';
import { pubsubMigrations } from './persistence.ts';
import type { PeekedEntry, PubSubStrategy, SubscriptionInfo } from './strategy.ts';
import * as sql from './cluster-sql.ts';
import { TenantPublishQuotas } from './tenant-quotas.ts';

export interface ClusterEngineOptions {
  store: DataStore;
  clock: Clock;
  log: Logger;
  defaultMaxDepth: number;
  /** How often expired messages are swept (by one node at a time); 0 = only when sweep() is called. */
  sweepIntervalMs: number;
  /** How long a get's messages stay in flight for its node before any node may deliver them again. */
  leaseMs: number;
  /** Milliseconds on a monotonic clock (default performance.now()), for how old a queue count is. */
  elapsed?: () => number;
  /** Tenants' quotas (the kernel's); none: tenants' publishes are not limited (tests). */
  quotas?: TenantQuotaApi | undefined;
}

interface TopicConf {
  name: string;
  /** The tenant whose topic it is (`acme/orders`); undefined for the platform's. */
  tenant: string | undefined;
  maxDepth: number;
  ephemeral: boolean;
}

interface PendingPublish {
  msg: Message;
  topic: TopicConf;
  resolve: (r: { msgId: string }) => void;
  reject: (err: unknown) => void;
}

interface Claimed {
  seq: number;
  subKey: string;
}

/** Most messages one get claims; a variant A get (every queued message) returns the rest at the next get. */
export const CLAIM_LIMIT = 1_000;
/** Publish transactions one node runs at once: PostgreSQL flushes the WAL of concurrent commits together. */
const PUBLISH_CONCURRENCY = 4;
/** Sweeps between two searches for messages no queue holds (see sql.deleteUnreferenced). */
const ORPHAN_SWEEP_EVERY = 10;
/** How old a queue's depth may be before a publish counts it again. */
const DEPTH_FRESH_MS = 200;
/** A queue this close to max_depth (a fraction of it) is counted at every publish. */
const DEPTH_MARGIN = 0.1;
/** How old a tenant's stored bytes may be before a publish counts them again (the count reads every message of the tenant). */
const BYTES_FRESH_MS = 1_000;
/** A tenant this close to pubsub_bytes (a fraction of it) is counted at every publish, under its lock. */
const BYTES_MARGIN = 0.1;

/**
 * The shared strategy: PostgreSQL holds every message, queue and subscription, so any node of a
 * cluster on one database publishes, subscribes and delivers. Memory holds only what config says
 * (topics, endpoints), which is the same on every node. A get claims rows with FOR UPDATE SKIP
 * LOCKED and leases them to its node until the response is written (then they are deleted) or
 * failed (then released with delivery_count + 1); the lease of a node that died runs out and any
 * node delivers the rows again. Publishes arriving together share one transaction (group commit).
 */
export class ClusterEngine implements PubSubStrategy {
  readonly nodeId = randomBytes(8).toString('hex');
  private readonly topics = new Map<string, TopicConf>();
  private readonly book = new ResourceBook();
  private pending: PendingPublish[] = [];
  private publishing = 0;
  private scheduled = false;
  private readonly settling = new Set<Promise<void>>();
  private acks: Claimed[] = [];
  private releases: Claimed[] = [];
  private settleScheduled = false;
  private idleWaiters: Array<() => void> = [];
  private sweeps = 0;
  /** Per queue (sub_key) or topic's retained set (retainedKey): the last count, and when it was made (on `elapsed`: an age is a duration, which a wall clock set back would stretch). */
  private readonly depthSeen = new Map<string, { depth: number; at: number }>();
  /** Per tenant with a pubsub_bytes quota: the bytes its messages held at the last count, raised by this node's publishes since. */
  private readonly bytesSeen = new Map<string, { bytes: number; at: number }>();
  private timer: NodeJS.Timeout | undefined;

  private readonly elapsed: () => number;
  private readonly tenantQuotas: TenantPublishQuotas;

  private constructor(private readonly opts: ClusterEngineOptions) {
    this.elapsed = opts.elapsed ?? (() => performance.now());
    this.tenantQuotas = new TenantPublishQuotas(opts.quotas);
  }

  static async open(opts: ClusterEngineOptions): Promise<ClusterEngine> {
    if (opts.store.dialect !== 'postgres') throw new Error('the shared pub/sub strategy needs PostgreSQL');
    await opts.store.migrate('pubsub', pubsubMigrations(opts.store.dialect));
    const engine = new ClusterEngine(opts);
    if (opts.sweepIntervalMs > 0) {
      engine.timer = setInterval(() => {
        // Tracked with the acks, so close() waits for a sweep under way before the store closes.
        const task = engine.sweep().then(
          () => undefined,
          (err: unknown) => opts.log.warn({ err }, 'pubsub: sweep failed'),
        );
        engine.settling.add(task);
        void task.finally(() => engine.settling.delete(task));
      }, opts.sweepIntervalMs);
      engine.timer.unref();
    }
    opts.log.info({ node: engine.nodeId, lease_ms: opts.leaseMs }, 'pubsub: queues in PostgreSQL, shared by every node on this database');
    return engine;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.idle();
  }

  /** Resolves when no publish is waiting or committing and every ack or release has been written. */
  async idle(): Promise<void> {
    while (this.settling.size > 0) await Promise.allSettled([...this.settling]);
    if (this.pending.length > 0 || this.publishing > 0 || this.scheduled) await new Promise<void>((r) => this.idleWaiters.push(r));
    if (this.settling.size > 0) await this.idle();
  }

  // ---- resources (config: the same on every node) ------------------------------------------------

  async applyConfig(resources: ResourceSet): Promise<void> {
    this.book.configure(resources);
    await this.reconcile();
  }

  async addEphemeral(resources: ResourceSet): Promise<void> {
    this.book.addEphemeral(resources);
    await this.reconcile();
  }

  endpointBySecurity(definition: string): PubSubEndpointView | undefined {
    return this.book.endpointBySecurity(definition);
  }

  endpointForService(service: string, topic: string): PubSubEndpointView | undefined {
    return this.book.endpointForService(service, topic);
  }

  endpointNamed(name: string): PubSubEndpointView | undefined {
    return this.book.endpoint(name);
  }

  hasTopic(topic: string): boolean {
    return this.topics.has(topic);
  }

  private async reconcile(): Promise<void> {
    const topicDefs = this.book.topicDefs();
    this.topics.clear();
    this.depthSeen.clear();
    this.bytesSeen.clear();
    for (const [name, { def, ephemeral }] of topicDefs) this.topics.set(name, { name, tenant: topicTenant(name), maxDepth: def.max_depth ?? this.opts.defaultMaxDepth, ephemeral });

    const wanted = this.book.wantedSubscriptions();
    const wantedIds = new Set(wanted.map((w) => subId(w.endpoint, w.topic)));
    const { store, log } = this.opts;
    for (const row of await sql.subscriptionRows(store)) {
      const ep = this.book.endpoint(row.endpoint);
      const keep = this.topics.has(row.topic) && ep !== undefined && ep.canSubscribe(row.topic) && (row.source === 'api' || wantedIds.has(subId(row.endpoint, row.topic)));
      if (keep) continue;
      log.warn({ endpoint: row.endpoint, topic: row.topic }, 'pubsub: subscription removed by config');
      await this.inTopic(row.topic, (tx) => sql.deleteSubscription(tx, row.sub_key));
    }
    const gone = await store.transaction((tx) => sql.deleteMessagesOutside(tx, [...this.topics.keys()]));
    if (gone > 0) log.warn({ messages: gone }, 'pubsub: messages of topics removed by config deleted');
    for (const { endpoint, topic } of wanted) {
      const ep = this.book.endpoint(endpoint);
      if (!ep || !this.topics.has(topic) || !ep.canSubscribe(topic)) {
        log.warn({ endpoint, topic }, 'pubsub: configured subscription skipped (unknown endpoint or topic, or no permission)');
        continue;
      }
      await this.subscribe(endpoint, topic, 'config');
    }
  }

  // ---- publish -------------------------------------------------------------------------------

  publish(req: PubSubPublishRequest): Promise<{ msgId: string }> {
    const topic = this.topics.get(req.topic);
    if (!topic) return Promise.reject(new SvcError('NOT_FOUND', 'Topic not found'));
    // Refused before any work: a tenant publishing past its rate costs the database nothing.
    const overRate = topic.tenant === undefined ? undefined : this.tenantQuotas.takePublish(topic.tenant);
    if (overRate) return Promise.reject(overRate);
    const now = this.opts.clock.now();
    const dataJson = JSON.stringify(req.data ?? null);
    const msg: Message = {
      msgId: newMsgId(),
      seq: 0,
      topic: topic.name,
      data: req.data,
      dataJson,
      size: typeof req.data === 'string' ? Buffer.byteLength(req.data) : Buffer.byteLength(dataJson),
      mimeType: req.mimeType,
      priority: clampPriority(req.priority),
      expiration: req.expiration,
      expiresAt: req.expiration === undefined ? undefined : now + req.expiration * 1000,
      pubTime: req.pubTime ?? now,
      recvTime: now,
      correlId: req.correlId,
      inReplyTo: req.inReplyTo,
      extClientId: req.extClientId,
      hasGd: req.hasGd,
      publisher: req.publisher,
      persistent: true,
      refs: 0,
    };
    return new Promise((resolve, reject) => {
      this.pending.push({ msg, topic, resolve, reject });
      this.schedulePublish();
    });
  }

  private schedulePublish(): void {
    if (this.scheduled || this.publishing >= PUBLISH_CONCURRENCY) return;
    this.scheduled = true;
    // setImmediate: every request parsed in this I/O phase joins the batch.
    setImmediate(() => {
      this.scheduled = false;
      if (this.pending.length === 0) return this.wakeIdle();
      const batch = this.pending.splice(0);
      this.publishing++;
      void this.commitPublishes(batch).finally(() => {
        this.publishing--;
        if (this.pending.length > 0) this.schedulePublish();
        else this.wakeIdle();
      });
      if (this.pending.length > 0) this.schedulePublish();
    });
  }

  private wakeIdle(): void {
    if (this.pending.length === 0 && this.publishing === 0 && !this.scheduled) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  private async commitPublishes(batch: PendingPublish[]): Promise<void> {
    try {
      const outcome = await this.opts.store.transaction((tx) => this.writePublishes(tx, batch));
      for (const [p, refusal] of outcome) (refusal ? p.reject(refusal) : p.resolve({ msgId: p.msg.msgId }));
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
      // One bad publish must not fail its neighbours: each again alone.
      this.opts.log.warn({ err, publishes: batch.length }, 'pubsub: group commit failed, retrying publishes one by one');
      for (const p of batch) await this.commitPublishes([p]);
    }
  }

  /**
   * One transaction for the batch: the topics' subscribers and queue depths as of now (under the
   * topics' shared locks), then every message that fits and its queue rows. A batch of non-GD
   * messages only commits without waiting for the WAL flush. Returns each publish's refusal, if any.
   */
  private async writePublishes(tx: Queryable, batch: readonly PendingPublish[]): Promise<Map<PendingPublish, SvcError | undefined>> {
    const now = this.opts.clock.now();
    if (!batch.some((p) => p.msg.hasGd)) await sql.asyncCommit(tx);
    const topicNames = [...new Set(batch.map((p) => p.topic.name))];
    await sql.lockTopicsShared(tx, topicNames);
    const subsByTopic = new Map<string, string[]>();
    for (const row of await sql.subscribersOf(tx, topicNames)) {
      const list = subsByTopic.get(row.topic);
      if (list) list.push(row.sub_key);
      else subsByTopic.set(row.topic, [row.sub_key]);
    }
    const depths = await this.depthsFor(tx, batch, subsByTopic, now);
    const held = await this.heldBytesFor(tx, batch);
    const outcome = new Map<PendingPublish, SvcError | undefined>();
    const accepted: Array<{ msg: Message; subKeys: readonly string[] }> = [];
    for (const p of batch) {
      const subKeys = subsByTopic.get(p.topic.name) ?? [];
      const counted = subKeys.length > 0 ? subKeys : [retainedKey(p.topic.name)];
      const counts = counted.map((k) => depths.get(k) ?? 0);
      const full = counts.findIndex((n) => n >= p.topic.maxDepth);
      if (full >= 0) {
        this.opts.log.warn(
          { topic: p.topic.name, depth: counts[full], max_depth: p.topic.maxDepth },
          subKeys.length > 0 ? 'pubsub: publish refused, a subscriber queue is full' : 'pubsub: publish refused, retained messages reached max_depth',
        );
        outcome.set(p, new SvcError('QUEUE_FULL', 'Queue is full'));
        continue;
      }
      const tenant = p.topic.tenant;
      const bytes = tenant === undefined ? undefined : held.get(tenant);
      if (tenant !== undefined && bytes) {
        const refusal = this.tenantQuotas.bytesRefusal(tenant, bytes.bytes, p.msg.size, bytes.limit);
        if (refusal) {
          outcome.set(p, refusal);
          continue;
        }
        bytes.bytes += p.msg.size;
        bytes.seen.bytes += p.msg.size;
      }
      for (const k of counted) {
        depths.set(k, (depths.get(k) ?? 0) + 1);
        const seen = this.depthSeen.get(k);
        if (seen) seen.depth++;
      }
      accepted.push({ msg: p.msg, subKeys });
      outcome.set(p, undefined);
    }
    if (accepted.length > 0) await sql.insertMessages(tx, accepted, now);
    return outcome;
  }

  /**
   * The depth of every queue (or retained set) the batch publishes to. Counting a queue costs an
   * index entry per message, so each node keeps the last count per queue, raised by its own
   * publishes, and counts again in the batch when that count is older than DEPTH_FRESH_MS or
   * within DEPTH_MARGIN of max_depth (docs/decisions/cluster.md, Pub/sub).
   */
  private async depthsFor(tx: Queryable, batch: readonly PendingPublish[], subsByTopic: ReadonlyMap<string, readonly string[]>, now: number): Promise<Map<string, number>> {
    const limits = new Map<string, { max: number; adding: number; topic?: string }>();
    for (const p of batch) {
      const subs = subsByTopic.get(p.topic.name);
      for (const k of subs ?? [retainedKey(p.topic.name)]) {
        const l = limits.get(k);
        if (l) l.adding++;
        else limits.set(k, { max: p.topic.maxDepth, adding: 1, ...(subs ? {} : { topic: p.topic.name }) });
      }
    }
    const depths = new Map<string, number>();
    const recountQueues: string[] = [];
    const recountTopics: string[] = [];
    let cap = 0;
    const at = this.elapsed();
    for (const [k, l] of limits) {
      const seen = this.depthSeen.get(k);
      if (seen && at - seen.at < DEPTH_FRESH_MS && seen.depth + l.adding < l.max * (1 - DEPTH_MARGIN)) {
        depths.set(k, seen.depth);
        continue;
      }
      if (l.topic === undefined) recountQueues.push(k);
      else recountTopics.push(l.topic);
      cap = Math.max(cap, l.max);
    }
    const counted = await sql.queueDepths(tx, recountQueues, now, cap);
    for (const [topic, n] of await sql.retainedCounts(tx, recountTopics)) counted.set(retainedKey(topic), n);
    for (const k of [...recountQueues, ...recountTopics.map(retainedKey)]) {
      const n = counted.get(k) ?? 0;
      depths.set(k, n);
      this.depthSeen.set(k, { depth: n, at });
    }
    return depths;
  }

  /**
   * The bytes each tenant of the batch with a pubsub_bytes quota holds in the database. As with
   * depths, a node keeps the last count per tenant, raised by its own publishes, and counts again
   * when it is older than BYTES_FRESH_MS or within BYTES_MARGIN of the quota. A tenant that close
   * is counted under its lock, held to the commit: its publishes near the quota take turns across
   * the nodes, each counting what the one before stored, so together they never pass it.
   */
  private async heldBytesFor(tx: Queryable, batch: readonly PendingPublish[]): Promise<Map<string, { bytes: number; limit: number; seen: { bytes: number; at: number } }>> {
    const held = new Map<string, { bytes: number; limit: number; seen: { bytes: number; at: number } }>();
    const adding = new Map<string, number>();
    for (const p of batch) if (p.topic.tenant !== undefined) adding.set(p.topic.tenant, (adding.get(p.topic.tenant) ?? 0) + p.msg.size);
    if (adding.size === 0) return held;
    const at = this.elapsed();
    const recount: Array<{ tenant: string; limit: number }> = [];
    const near: string[] = [];
    for (const [tenant, bytes] of adding) {
      const limit = this.tenantQuotas.bytesLimit(tenant);
      if (limit === undefined) continue;
      const seen = this.bytesSeen.get(tenant);
      const close = seen === undefined || seen.bytes + bytes >= limit * (1 - BYTES_MARGIN);
      if (seen && !close && at - seen.at < BYTES_FRESH_MS) {
        held.set(tenant, { bytes: seen.bytes, limit, seen });
        continue;
      }
      recount.push({ tenant, limit });
      if (close) near.push(tenant);
    }
    if (recount.length === 0) return held;
    await sql.lockTenantBytes(tx, near);
    const counted = await sql.tenantBytes(tx, recount.map((r) => r.tenant));
    for (const { tenant, limit } of recount) {
      const seen = { bytes: counted.get(tenant) ?? 0, at };
      this.bytesSeen.set(tenant, seen);
      held.set(tenant, { bytes: seen.bytes, limit, seen });
    }
    return held;
  }

  // ---- subscriptions -------------------------------------------------------------------------

  private inTopic<T>(topic: string, fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.opts.store.transaction(async (tx) => {
      await sql.lockTopic(tx, topic);
      return fn(tx);
    });
  }

  async subscribe(endpoint: string, topicName: string, source: SubscriptionSource = 'api'): Promise<{ subKey: string; created: boolean; queueDepth: number }> {
    if (!this.topics.has(topicName)) throw new SvcError('NOT_FOUND', 'Topic not found');
    const now = this.opts.clock.now();
    return this.inTopic(topicName, async (tx) => {
      const existing = await sql.subscriptionOf(tx, endpoint, topicName);
      if (existing) {
        if (source === 'config' && existing.source !== 'config') await tx.run("UPDATE pubsub_subscription SET source = 'config' WHERE sub_key = ?", [existing.sub_key]);
        const depth = (await sql.queueDepths(tx, [existing.sub_key], now)).get(existing.sub_key) ?? 0;
        return { subKey: existing.sub_key, created: false, queueDepth: depth };
      }
      const subKey = newSubKey();
      await tx.run('INSERT INTO pubsub_subscription (sub_key, endpoint, topic, source, created_at) VALUES (?, ?, ?, ?, ?)', [subKey, endpoint, topicName, source, now]);
      const moved = await sql.moveRetained(tx, topicName, subKey, now);
      if (moved > 0) this.opts.log.info({ topic: topicName, endpoint, moved }, 'pubsub: retained messages moved to a new subscriber');
      return { subKey, created: true, queueDepth: moved };
    });
  }

  async unsubscribe(endpoint: string, topicName: string): Promise<boolean> {
    return this.inTopic(topicName, async (tx) => {
      const existing = await sql.subscriptionOf(tx, endpoint, topicName);
      return existing ? sql.deleteSubscription(tx, existing.sub_key) : false;
    });
  }

  async subscriptionKey(endpoint: string, topic: string): Promise<string | undefined> {
    if (!this.topics.has(topic)) return undefined;
    return (await sql.subscriptionOf(this.opts.store, endpoint, topic))?.sub_key;
  }

  async subscriptionKeys(endpoint: string): Promise<string[]> {
    const rows = await this.opts.store.all<{ sub_key: string; topic: string }>('SELECT sub_key, topic FROM pubsub_subscription WHERE endpoint = ? ORDER BY created_at', [endpoint]);
    return rows.filter((r) => this.topics.has(r.topic)).map((r) => r.sub_key);
  }

  // ---- get -----------------------------------------------------------------------------------

  async take(subKeys: readonly string[], options: { order: 'lifo' | 'priority'; maxMessages: number; maxBytes: number }): Promise<PubSubDelivery> {
    const keys = [...new Set(subKeys)];
    const limit = Math.min(options.maxMessages, CLAIM_LIMIT);
    if (keys.length === 0 || limit <= 0) return new ClusterDelivery(this, [], []);
    const now = this.opts.clock.now();
    const { views, claimed } = await this.opts.store.transaction(async (tx) => {
      // Losing a lease with a PostgreSQL crash only makes its messages deliverable again.
      await sql.asyncCommit(tx);
      const rows = await sql.claimCandidates(tx, keys, options.order, limit, now);
      const views: PubSubMessageView[] = [];
      const claimed: Claimed[] = [];
      let bytes = 0;
      for (const row of rows) {
        const size = Number(row.size);
        if (bytes + size > options.maxBytes) continue;
        bytes += size;
        const deliveryCount = Number(row.delivery_count) + (row.lease_until === null ? 0 : 1);
        views.push(toView(sql.messageOf(row), row.sub_key, deliveryCount));
        claimed.push({ seq: Number(row.seq), subKey: row.sub_key });
      }
      if (claimed.length > 0) await sql.lease(tx, claimed, this.nodeId, now + this.opts.leaseMs);
      return { views, claimed };
    });
    return new ClusterDelivery(this, views, claimed);
  }

  /** The response was written: the rows go (with the other acks of this turn, in one transaction). */
  acknowledge(rows: readonly Claimed[]): void {
    this.acks.push(...rows);
    this.scheduleSettle();
  }

  /** The response was not written: the rows go back with delivery_count + 1. */
  redeliver(rows: readonly Claimed[]): void {
    this.releases.push(...rows);
    this.scheduleSettle();
  }

  private scheduleSettle(): void {
    if (this.settleScheduled) return;
    this.settleScheduled = true;
    const task = new Promise<void>((resolve) =>
      setImmediate(() => {
        this.settleScheduled = false;
        const acks = this.acks.splice(0);
        const releases = this.releases.splice(0);
        void this.writeSettled(acks, releases).finally(resolve);
      }),
    );
    this.settling.add(task);
    void task.finally(() => this.settling.delete(task));
  }

  /**
   * A write that keeps failing is logged and given up: the leases run out and the messages are
   * delivered again (at least once).
   */
  private async writeSettled(acks: readonly Claimed[], releases: readonly Claimed[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.opts.store.transaction(async (tx) => {
          await sql.asyncCommit(tx);
          if (releases.length > 0) await sql.release(tx, releases, this.nodeId);
          if (acks.length > 0) await sql.deleteDelivered(tx, acks);
        });
        return;
      } catch (err) {
        // Deadlocks between nodes deleting the last copies of the same messages are worth another try.
        if (attempt >= 3) {
          this.opts.log.error({ err, delivered: acks.length, released: releases.length }, 'pubsub: store write failed: settling delivered messages');
          return;
        }
      }
    }
  }

  // ---- expiry --------------------------------------------------------------------------------

  async sweep(): Promise<number> {
    const now = this.opts.clock.now();
    const orphans = ++this.sweeps % ORPHAN_SWEEP_EVERY === 0;
    return this.opts.store.transaction(async (tx) => {
      if (!(await sql.trySweepLock(tx))) return 0;
      await sql.asyncCommit(tx);
      const expired = await sql.deleteExpired(tx, now);
      if (orphans) await sql.deleteOrphans(tx);
      return expired;
    });
  }

  // ---- inspection (control ops, metrics) -------------------------------------------------------

  async topicList(): Promise<TopicInfo[]> {
    const subs = await sql.depthsBySubscription(this.opts.store, this.opts.clock.now());
    const retained = await sql.retainedByTopic(this.opts.store);
    return [...this.topics.values()].map((t) => {
      const mine = subs.filter((s) => s.topic === t.name);
      return { name: t.name, maxDepth: t.maxDepth, ephemeral: t.ephemeral, retained: retained.get(t.name) ?? 0, subscriptions: mine.length, queued: mine.reduce((n, s) => n + s.depth, 0) };
    });
  }

  async subscriptionList(): Promise<SubscriptionInfo[]> {
    const rows = await sql.subscriptionRows(this.opts.store);
    return rows.map((r) => ({ subKey: r.sub_key, endpoint: r.endpoint, topic: r.topic, source: r.source === 'config' ? 'config' : 'api', createdAt: Number(r.created_at) }));
  }

  async queueDepth(subKey: string): Promise<number> {
    return (await sql.queueDepths(this.opts.store, [subKey], this.opts.clock.now())).get(subKey) ?? 0;
  }

  async peek(subKey: string, limit: number): Promise<PeekedEntry[]> {
    const rows = await sql.peekRows(this.opts.store, subKey, limit, this.opts.clock.now());
    return rows.map((r) => ({ msg: sql.messageOf(r), deliveryCount: Number(r.delivery_count) }));
  }

  async stats(): Promise<{ subscriptions: Array<{ endpoint: string; topic: string; depth: number }> }> {
    const rows = await sql.depthsBySubscription(this.opts.store, this.opts.clock.now());
    return { subscriptions: rows.map((r) => ({ endpoint: r.endpoint, topic: r.topic, depth: r.depth })) };
  }
}

function retainedKey(topic: string): string {
  return `retained:${topic}`;
}

class ClusterDelivery implements PubSubDelivery {
  private settled = false;

  constructor(
    private readonly engine: ClusterEngine,
    readonly messages: readonly PubSubMessageView[],
    private readonly rows: readonly Claimed[],
  ) {}

  ack(): void {
    if (this.settled) return;
    this.settled = true;
    if (this.rows.length > 0) this.engine.acknowledge(this.rows);
  }

  nack(): void {
    if (this.settled) return;
    this.settled = true;
    if (this.rows.length > 0) this.engine.redeliver(this.rows);
  }
}
