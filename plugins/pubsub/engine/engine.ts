import type { Logger } from 'pino';
import type { Clock, TenantQuotaApi } from '../../../sdk/plugin/index.ts';
import type { DataStore } from '../../../sdk/plugin/index.ts';
import { SvcError } from '../../../sdk/plugin/index.ts';
import type {
  PubSubDelivery,
  PubSubEndpointView,
  PubSubMessageView,
  PubSubPublishRequest,
} from '../../capabilities.ts';
import { GroupCommitter, type WriteOp } from './group-commit.ts';
import { newMsgId, newSubKey } from './ids.ts';
import { clampPriority, EntryQueue, PRIORITY_LEVELS, type Entry, type Message, type ResourceSet, type Subscription, type SubscriptionSource, type TopicInfo } from './model.ts';
import { topicTenant } from '../shared/patterns.ts';
import { toView } from '../shared/projection.ts';
import * as db from './persistence.ts';
import { ResourceBook, subId } from './resources.ts';
import type { PubSubStrategy } from './strategy.ts';
import { HeldBytes, TenantPublishQuotas } from './tenant-quotas.ts';

// The resource types moved to model.ts (strategy.ts needs them without importing this file); kept here for importers.
export type { EndpointDef, ResourceSet, SubscriptionDef, TopicDef, TopicInfo } from './model.ts';

export interface EngineOptions {
  store: DataStore;
  clock: Clock;
  log: Logger;
  /** Queue depth per subscriber (and of a topic's retained messages) when a topic sets none. */
  defaultMaxDepth: number;
  /** How often expired messages are swept; 0 = only when sweep() is called (tests). */
  sweepIntervalMs: number;
  /** Tenants' quotas (the kernel's); none: tenants' publishes are not limited (tests). */
  quotas?: TenantQuotaApi | undefined;
}

interface TopicState {
  name: string;
  /** The tenant whose topic it is (`acme/orders`); undefined for the platform's. */
  tenant: string | undefined;
  maxDepth: number;
  /** Held in memory only (`svc demo`): nothing about it is stored. */
  ephemeral: boolean;
  retained: EntryQueue;
  /** By endpoint name, in subscription order. */
  subs: Map<string, Subscription>;
  /** GD publishes waiting for their commit, counted against max_depth. */
  pending: number;
  moveScheduled: boolean;
}


interface Taken {
  sub: Subscription;
  entry: Entry;
}

/**
 * Topics, endpoints, subscriptions and per-subscriber queues. Memory is authoritative while the
 * server runs (a get is synchronous, so concurrent getters never share a message); the store keeps
 * the persistent part for restarts. Every store write goes through one ordered group committer.
 */
export class PubSubEngine implements PubSubStrategy {
  private readonly topics = new Map<string, TopicState>();
  private readonly book = new ResourceBook();
  private readonly subsByKey = new Map<string, Subscription>();
  private readonly subsByEndpoint = new Map<string, Map<string, Subscription>>();
  private readonly writer: GroupCommitter;
  private readonly background = new Set<Promise<void>>();
  private nextSeq = 1;
  private timer: NodeJS.Timeout | undefined;
  private readonly tenantQuotas: TenantPublishQuotas;
  /** Memory holds every live message: what it holds of each tenant's is what pubsub_bytes counts. */
  private readonly heldBytes = new HeldBytes();

  private constructor(private readonly opts: EngineOptions) {
    this.writer = new GroupCommitter(opts.store, opts.log, db.PUBLISH_INSERTS);
    this.tenantQuotas = new TenantPublishQuotas(opts.quotas);
  }

  /** Migrates the tables and loads the stored state. Call applyConfig next. */
  static async open(opts: EngineOptions): Promise<PubSubEngine> {
    await opts.store.migrate('pubsub', db.pubsubMigrations(opts.store.dialect));
    const engine = new PubSubEngine(opts);
    await engine.load();
    if (opts.sweepIntervalMs > 0) {
      engine.timer = setInterval(() => engine.sweep(), opts.sweepIntervalMs);
      engine.timer.unref();
    }
    return engine;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.idle();
  }

  /** Resolves once background moves and store writes started so far have finished. */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
    await this.writer.idle();
  }

  // ---- resources ---------------------------------------------------------------------------

  /** The configured resources (config plus built-ins); replaces the previous set. */
  async applyConfig(resources: ResourceSet): Promise<void> {
    this.book.configure(resources);
    await this.reconcile();
  }

  /** Adds resources held in memory only (`svc demo`); they survive config reloads, not restarts. */
  async addEphemeral(resources: ResourceSet): Promise<void> {
    this.book.addEphemeral(resources);
    await this.reconcile();
  }

  endpointBySecurity(definition: string): PubSubEndpointView | undefined {
    return this.book.endpointBySecurity(definition);
  }

  /** The endpoint through which config lets a service publish to a topic. */
  endpointForService(service: string, topic: string): PubSubEndpointView | undefined {
    return this.book.endpointForService(service, topic);
  }

  hasTopic(topic: string): boolean {
    return this.topics.has(topic);
  }

  subscriptionKey(endpoint: string, topic: string): string | undefined {
    return this.subsByEndpoint.get(endpoint)?.get(topic)?.subKey;
  }

  subscriptionKeys(endpoint: string): string[] {
    return [...(this.subsByEndpoint.get(endpoint)?.values() ?? [])].map((s) => s.subKey);
  }

  /** Messages queued for a subscription (tests, logs). */
  queueDepth(subKey: string): number {
    return this.subsByKey.get(subKey)?.queue.count ?? 0;
  }

  retainedCount(topic: string): number {
    return this.topics.get(topic)?.retained.count ?? 0;
  }

  // ---- inspection (the operators' control ops, control.ts) ----------------------------------

  /** Each topic with its depth limit, retained messages and subscribers' queued entries. */
  topicList(): TopicInfo[] {
    return [...this.topics.values()].map((t) => {
      let queued = 0;
      for (const sub of t.subs.values()) queued += sub.queue.count;
      return { name: t.name, maxDepth: t.maxDepth, ephemeral: t.ephemeral, retained: t.retained.count, subscriptions: t.subs.size, queued };
    });
  }

  /** Every subscription; the records are the engine's own: read them, never change them. */
  subscriptionList(): readonly Subscription[] {
    return [...this.subsByKey.values()];
  }

  endpointNamed(name: string): PubSubEndpointView | undefined {
    return this.book.endpoint(name);
  }

  /**
   * Up to `limit` live entries of a subscription's queue, without taking them: highest priority
   * first, oldest first within one (variant B's order). Expired ones are left out, as a get would.
   */
  peek(subKey: string, limit: number): Entry[] {
    const sub = this.subsByKey.get(subKey);
    if (!sub) return [];
    const now = this.opts.clock.now();
    const out: Entry[] = [];
    for (let p = PRIORITY_LEVELS - 1; p >= 0 && out.length < limit; p--) {
      for (const entry of sub.queue.buckets[p]!) {
        if (out.length >= limit) break;
        if (!isExpired(entry.msg, now)) out.push(entry);
      }
    }
    return out;
  }

  // ---- publish -----------------------------------------------------------------------------

  async publish(req: PubSubPublishRequest): Promise<{ msgId: string }> {
    const topic = this.topics.get(req.topic);
    if (!topic) throw new SvcError('NOT_FOUND', 'Topic not found');
    const overRate = topic.tenant === undefined ? undefined : this.tenantQuotas.takePublish(topic.tenant);
    if (overRate) throw overRate;
    this.checkDepth(topic);
    const now = this.opts.clock.now();
    const dataJson = JSON.stringify(req.data ?? null);
    const msg: Message = {
      msgId: newMsgId(),
      seq: this.nextSeq++,
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
      persistent: req.hasGd && !topic.ephemeral,
      refs: 0,
    };
    // Held from here, so that publishes waiting for their commit count against the quota too.
    if (topic.tenant !== undefined) this.holdTenantBytes(topic.tenant, msg);
    const targets = [...topic.subs.values()];
    if (!msg.persistent) {
      this.enqueue(topic, msg, targets, now);
      return { msgId: msg.msgId };
    }
    topic.pending++;
    try {
      const subKeys = targets.map((s) => s.subKey);
      await this.writer.write((tx) => db.insertMessage(tx, msg, subKeys, targets.length === 0), true);
    } catch (err) {
      this.freed(msg);
      throw err;
    } finally {
      topic.pending--;
    }
    // Things may have changed while the commit ran: the topic or some subscribers may be gone.
    if (this.topics.get(topic.name) !== topic) {
      this.freed(msg);
      this.write((tx) => db.deleteMessages(tx, [msg.seq]), 'drop message of a removed topic');
      return { msgId: msg.msgId };
    }
    const live = targets.filter((s) => this.subsByKey.get(s.subKey) === s);
    if (targets.length > 0 && live.length === 0) {
      this.write((tx) => db.markRetained(tx, [msg.seq], true), 'retain message');
    }
    this.enqueue(topic, msg, live, now);
    return { msgId: msg.msgId };
  }

  /** Throws the refusal when the message would take the tenant past pubsub_bytes; else its bytes are held. */
  private holdTenantBytes(tenant: string, msg: Message): void {
    const limit = this.tenantQuotas.bytesLimit(tenant);
    if (limit !== undefined) {
      const refusal = this.tenantQuotas.bytesRefusal(tenant, this.heldBytes.of(tenant), msg.size, limit);
      if (refusal) throw refusal;
    }
    this.heldBytes.add(tenant, msg.size);
  }

  /** The message's last copy left memory (delivered, expired, dropped): its bytes are no longer its tenant's. */
  private freed(msg: Message): void {
    const tenant = topicTenant(msg.topic);
    if (tenant !== undefined) this.heldBytes.remove(tenant, msg.size);
  }

  /** A full queue never drops silently: the publish is refused (docs/decisions/pubsub.md). */
  private checkDepth(topic: TopicState): void {
    const limit = topic.maxDepth - topic.pending;
    if (topic.subs.size === 0) {
      if (topic.retained.count >= limit) throw this.queueFull(topic, undefined, topic.retained.count);
      return;
    }
    for (const sub of topic.subs.values()) {
      if (sub.queue.count >= limit) throw this.queueFull(topic, sub.endpoint, sub.queue.count);
    }
  }

  private queueFull(topic: TopicState, endpoint: string | undefined, depth: number): SvcError {
    this.opts.log.warn(
      { topic: topic.name, endpoint, depth, max_depth: topic.maxDepth, pending: topic.pending },
      endpoint ? 'pubsub: publish refused, a subscriber queue is full' : 'pubsub: publish refused, retained messages reached max_depth',
    );
    return new SvcError('QUEUE_FULL', 'Queue is full');
  }

  private enqueue(topic: TopicState, msg: Message, subs: readonly Subscription[], now: number): void {
    if (subs.length === 0) {
      msg.refs = 1;
      topic.retained.insert({ msg, deliveryCount: 0, enqueuedAt: now });
      if (topic.subs.size > 0) this.scheduleMove(topic);
      return;
    }
    msg.refs = subs.length;
    for (const sub of subs) sub.queue.insert({ msg, deliveryCount: 0, enqueuedAt: now });
  }

  // ---- subscriptions -------------------------------------------------------------------------

  async subscribe(endpoint: string, topicName: string, source: SubscriptionSource = 'api'): Promise<{ subKey: string; created: boolean; queueDepth: number }> {
    const topic = this.topics.get(topicName);
    if (!topic) throw new SvcError('NOT_FOUND', 'Topic not found');
    const existing = this.subsByEndpoint.get(endpoint)?.get(topicName);
    if (existing) return { subKey: existing.subKey, created: false, queueDepth: existing.queue.count };
    const sub: Subscription = {
      subKey: newSubKey(),
      endpoint,
      topic: topicName,
      source,
      persistent: !topic.ephemeral,
      createdAt: this.opts.clock.now(),
      queue: new EntryQueue(),
    };
    this.addSubscription(topic, sub);
    if (sub.persistent) {
      try {
        await this.writer.write((tx) => db.insertSubscription(tx, sub), true);
      } catch (err) {
        this.forgetSubscription(sub);
        throw err;
      }
    }
    this.scheduleMove(topic);
    return { subKey: sub.subKey, created: true, queueDepth: sub.queue.count };
  }

  async unsubscribe(endpoint: string, topicName: string): Promise<boolean> {
    const sub = this.subsByEndpoint.get(endpoint)?.get(topicName);
    if (!sub) return false;
    await this.removeSubscription(sub);
    return true;
  }

  private addSubscription(topic: TopicState, sub: Subscription): void {
    topic.subs.set(sub.endpoint, sub);
    this.subsByKey.set(sub.subKey, sub);
    let mine = this.subsByEndpoint.get(sub.endpoint);
    if (!mine) this.subsByEndpoint.set(sub.endpoint, (mine = new Map()));
    mine.set(sub.topic, sub);
  }

  /** Drops a subscription from memory; returns the persistent messages nothing references any more. */
  private forgetSubscription(sub: Subscription): number[] {
    this.topics.get(sub.topic)?.subs.delete(sub.endpoint);
    this.subsByKey.delete(sub.subKey);
    const mine = this.subsByEndpoint.get(sub.endpoint);
    mine?.delete(sub.topic);
    if (mine?.size === 0) this.subsByEndpoint.delete(sub.endpoint);
    return this.release(sub.queue.removeAll().map((e) => e.msg));
  }

  private async removeSubscription(sub: Subscription): Promise<void> {
    const unreferenced = this.forgetSubscription(sub);
    if (sub.persistent) await this.writer.write((tx) => db.deleteSubscription(tx, sub.subKey, unreferenced), true);
  }

  /** Lowers reference counts; returns the seqs of stored messages that became unreferenced. */
  private release(msgs: Iterable<Message>): number[] {
    const gone: number[] = [];
    for (const msg of msgs) {
      if (--msg.refs !== 0) continue;
      this.freed(msg);
      if (msg.persistent) gone.push(msg.seq);
    }
    return gone;
  }

  // ---- retained messages -----------------------------------------------------------------------

  private scheduleMove(topic: TopicState): void {
    if (topic.moveScheduled || topic.retained.count === 0) return;
    topic.moveScheduled = true;
    const task = new Promise<void>((resolve) =>
      setImmediate(() => {
        topic.moveScheduled = false;
        try {
          this.moveRetained(topic);
        } catch (err) {
          this.opts.log.error({ err, topic: topic.name }, 'pubsub: moving retained messages failed');
        }
        resolve();
      }),
    );
    this.background.add(task);
    void task.finally(() => this.background.delete(task));
  }

  /** Moves a topic's retained messages to its first subscriber (the one that just arrived). */
  private moveRetained(topic: TopicState): void {
    if (this.topics.get(topic.name) !== topic) return;
    const sub = topic.subs.values().next().value;
    if (!sub || topic.retained.count === 0) return;
    const now = this.opts.clock.now();
    let moved = 0;
    const stored: number[] = [];
    const expired: Message[] = [];
    for (const entry of topic.retained.removeAll()) {
      if (isExpired(entry.msg, now)) {
        expired.push(entry.msg);
        continue;
      }
      sub.queue.insert({ msg: entry.msg, deliveryCount: entry.deliveryCount, enqueuedAt: now });
      moved++;
      if (entry.msg.persistent) stored.push(entry.msg.seq);
    }
    if (stored.length > 0) this.write((tx) => db.moveRetainedRows(tx, sub.subKey, stored, now), 'move retained messages');
    this.dropExpired(expired);
    this.opts.log.info({ topic: topic.name, endpoint: sub.endpoint, moved }, 'pubsub: retained messages moved to a new subscriber');
  }

  // ---- get -----------------------------------------------------------------------------------

  take(subKeys: readonly string[], options: { order: 'lifo' | 'priority'; maxMessages: number; maxBytes: number }): PubSubDelivery {
    const now = this.opts.clock.now();
    const subs = [...new Set(subKeys)].map((k) => this.subsByKey.get(k)).filter((s): s is Subscription => s !== undefined);
    const removed = new Map<Subscription, Set<Entry>>(subs.map((s) => [s, new Set()]));
    const taken: Taken[] = [];
    const expired: Message[] = [];
    let bytes = 0;
    const candidates = options.order === 'lifo' ? newestFirst(subs) : byPriority(subs);
    for (const c of candidates) {
      if (taken.length >= options.maxMessages) break;
      if (isExpired(c.entry.msg, now)) {
        removed.get(c.sub)!.add(c.entry);
        expired.push(c.entry.msg);
        continue;
      }
      if (bytes + c.entry.msg.size > options.maxBytes) continue;
      bytes += c.entry.msg.size;
      removed.get(c.sub)!.add(c.entry);
      taken.push(c);
    }
    for (const [sub, gone] of removed) sub.queue.remove(gone);
    this.dropExpired(expired);
    return new Delivery(this, taken);
  }

  /** The response carrying these messages was written: they are gone for good. */
  acknowledge(items: readonly Taken[]): void {
    const rows: Array<{ subKey: string; seq: number }> = [];
    for (const { sub, entry } of items) if (entry.msg.persistent && sub.persistent) rows.push({ subKey: sub.subKey, seq: entry.msg.seq });
    const unreferenced = this.release(items.map((t) => t.entry.msg));
    if (rows.length > 0 || unreferenced.length > 0) {
      this.write((tx) => db.deleteQueueRows(tx, rows, unreferenced), 'delete delivered messages');
    }
  }

  /** The response could not be written: the messages go back, their delivery count raised. */
  redeliver(items: readonly Taken[]): void {
    const now = this.opts.clock.now();
    const dropped: Message[] = [];
    for (const { sub, entry } of items) {
      const alive = this.subsByKey.get(sub.subKey) === sub;
      if (!alive || isExpired(entry.msg, now)) {
        dropped.push(entry.msg);
        continue;
      }
      entry.deliveryCount++;
      sub.queue.insert(entry);
      if (entry.msg.persistent && sub.persistent) {
        const { subKey } = sub;
        const { seq } = entry.msg;
        const count = entry.deliveryCount;
        this.write((tx) => db.setDeliveryCount(tx, subKey, seq, count), 'raise delivery count');
      }
    }
    const unreferenced = this.release(dropped);
    if (unreferenced.length > 0) this.write((tx) => db.deleteMessages(tx, unreferenced), 'delete dropped messages');
  }

  // ---- expiry --------------------------------------------------------------------------------

  /** Removes expired messages from every queue and from the store; returns how many entries went. */
  sweep(): number {
    const now = this.opts.clock.now();
    const expired: Message[] = [];
    const isOld = (e: Entry) => isExpired(e.msg, now);
    for (const topic of this.topics.values()) {
      for (const e of topic.retained.removeWhere(isOld)) expired.push(e.msg);
      for (const sub of topic.subs.values()) for (const e of sub.queue.removeWhere(isOld)) expired.push(e.msg);
    }
    this.dropExpired(expired);
    return expired.length;
  }

  private dropExpired(msgs: readonly Message[]): void {
    if (msgs.length === 0) return;
    for (const m of msgs) if (--m.refs === 0) this.freed(m);
    // Every copy of an expired message is dead: delete its rows whatever other queues still hold in memory.
    const ids = [...new Set(msgs.filter((m) => m.persistent).map((m) => m.seq))];
    if (ids.length > 0) this.write((tx) => db.deleteMessages(tx, ids), 'delete expired messages');
  }

  // ---- config reconciliation ---------------------------------------------------------------------

  private async reconcile(): Promise<void> {
    const topicDefs = this.book.topicDefs();

    const writes: Promise<void>[] = [];
    for (const topic of [...this.topics.values()]) {
      const wanted = topicDefs.get(topic.name);
      if (!wanted || wanted.ephemeral !== topic.ephemeral) writes.push(this.dropTopic(topic));
    }
    for (const [name, { def, ephemeral }] of topicDefs) {
      const state = this.topicState(name, ephemeral);
      state.maxDepth = def.max_depth ?? this.opts.defaultMaxDepth;
    }

    const wanted = this.book.wantedSubscriptions();
    const wantedSubs = new Set(wanted.map((w) => subId(w.endpoint, w.topic)));
    for (const sub of [...this.subsByKey.values()]) {
      const ep = this.book.endpoint(sub.endpoint);
      const keep = ep !== undefined && ep.canSubscribe(sub.topic) && (sub.source === 'api' || wantedSubs.has(subId(sub.endpoint, sub.topic)));
      if (!keep) {
        this.opts.log.warn({ endpoint: sub.endpoint, topic: sub.topic, queued: sub.queue.count }, 'pubsub: subscription removed by config');
        writes.push(this.removeSubscription(sub));
      }
    }
    for (const w of wanted) writes.push(this.ensureConfigSubscription(w.endpoint, w.topic));
    await Promise.all(writes);
    for (const topic of this.topics.values()) if (topic.subs.size > 0) this.scheduleMove(topic);
  }

  private async ensureConfigSubscription(endpoint: string, topicName: string): Promise<void> {
    const ep = this.book.endpoint(endpoint);
    if (!ep || !this.topics.has(topicName) || !ep.canSubscribe(topicName)) {
      this.opts.log.warn({ endpoint, topic: topicName }, 'pubsub: configured subscription skipped (unknown endpoint or topic, or no permission)');
      return;
    }
    const existing = this.subsByEndpoint.get(endpoint)?.get(topicName);
    if (!existing) {
      await this.subscribe(endpoint, topicName, 'config');
      return;
    }
    if (existing.source !== 'config') {
      existing.source = 'config';
      if (existing.persistent) await this.writer.write((tx) => db.setSubscriptionSource(tx, existing.subKey, 'config'), false);
    }
  }

  private topicState(name: string, ephemeral: boolean): TopicState {
    let state = this.topics.get(name);
    if (!state) {
      state = {
        name,
        tenant: topicTenant(name),
        maxDepth: this.opts.defaultMaxDepth,
        ephemeral,
        retained: new EntryQueue(),
        subs: new Map(),
        pending: 0,
        moveScheduled: false,
      };
      this.topics.set(name, state);
    }
    return state;
  }

  private async dropTopic(topic: TopicState): Promise<void> {
    this.topics.delete(topic.name);
    const subs = [...topic.subs.values()];
    const retained = topic.retained.removeAll().map((e) => e.msg);
    this.opts.log.warn({ topic: topic.name, subscriptions: subs.length, retained: retained.length }, 'pubsub: topic removed by config, its messages are deleted');
    const unreferenced = this.release(retained);
    const writes = subs.map((s) => this.removeSubscription(s));
    if (unreferenced.length > 0) writes.push(this.writer.write((tx) => db.deleteMessages(tx, unreferenced), false));
    await Promise.all(writes);
  }

  // ---- startup -------------------------------------------------------------------------------

  private async load(): Promise<void> {
    const rows = await db.loadAll(this.opts.store);
    for (const row of rows.subscriptions) {
      const topic = this.topicState(row.topic, false);
      this.addSubscription(topic, {
        subKey: row.sub_key,
        endpoint: row.endpoint,
        topic: row.topic,
        source: row.source === 'config' ? 'config' : 'api',
        persistent: true,
        createdAt: Number(row.created_at),
        queue: new EntryQueue(),
      });
    }
    const messages = new Map<number, Message>();
    let maxSeq = 0;
    for (const row of rows.messages) {
      const msg = db.messageFromRow(row);
      messages.set(msg.seq, msg);
      maxSeq = Math.max(maxSeq, msg.seq);
      if (row.retained) {
        msg.refs++;
        this.topicState(msg.topic, false).retained.insert({ msg, deliveryCount: 0, enqueuedAt: msg.recvTime });
      }
    }
    // Rows of a subscription that is gone (a delivery in flight when it went) are deleted now.
    const stale: Array<{ subKey: string; seq: number }> = [];
    for (const row of rows.queue) {
      const msg = messages.get(Number(row.seq));
      const sub = this.subsByKey.get(row.sub_key);
      if (!msg || !sub) {
        stale.push({ subKey: row.sub_key, seq: Number(row.seq) });
        continue;
      }
      msg.refs++;
      sub.queue.insert({ msg, deliveryCount: Number(row.delivery_count), enqueuedAt: Number(row.enqueued_at) });
    }
    this.nextSeq = maxSeq + 1;
    const orphans = [...messages.values()].filter((m) => m.refs === 0).map((m) => m.seq);
    for (const m of messages.values()) {
      const tenant = m.refs > 0 ? topicTenant(m.topic) : undefined;
      if (tenant !== undefined) this.heldBytes.add(tenant, m.size);
    }
    if (orphans.length > 0 || stale.length > 0) await this.writer.write((tx) => db.deleteQueueRows(tx, stale, orphans), false);
    this.sweep();
    this.opts.log.info(
      { messages: messages.size - orphans.length, subscriptions: this.subsByKey.size },
      'pubsub: stored messages and subscriptions loaded',
    );
  }

  /** A background write: failures are logged (the memory state stays right; a restart reloads). */
  private write(op: WriteOp, what: string): void {
    this.writer.write(op, false).catch((err) => this.opts.log.error({ err }, `pubsub: store write failed: ${what}`));
  }
}

class Delivery implements PubSubDelivery {
  readonly messages: readonly PubSubMessageView[];
  private settled = false;

  constructor(
    private readonly engine: PubSubEngine,
    private readonly items: readonly Taken[],
  ) {
    this.messages = items.map(({ sub, entry }) => toView(entry.msg, sub.subKey, entry.deliveryCount));
  }

  ack(): void {
    if (this.settled) return;
    this.settled = true;
    if (this.items.length > 0) this.engine.acknowledge(this.items);
  }

  nack(): void {
    if (this.settled) return;
    this.settled = true;
    if (this.items.length > 0) this.engine.redeliver(this.items);
  }
}

export function isExpired(msg: Message, now: number): boolean {
  return msg.expiresAt !== undefined && msg.expiresAt <= now;
}


/**
 * Every queued entry of the subscriptions, most recently published first: the buckets are each
 * sorted by seq, so this merges them from their ends (usually there is one non-empty bucket).
 */
function* newestFirst(subs: readonly Subscription[]): Generator<Taken> {
  const lists: Array<{ sub: Subscription; bucket: Entry[]; at: number }> = [];
  for (const sub of subs) for (const bucket of sub.queue.buckets) if (bucket.length > 0) lists.push({ sub, bucket, at: bucket.length - 1 });
  if (lists.length === 1) {
    const { sub, bucket } = lists[0]!;
    for (let i = bucket.length - 1; i >= 0; i--) yield { sub, entry: bucket[i]! };
    return;
  }
  for (;;) {
    let best: (typeof lists)[number] | undefined;
    for (const l of lists) {
      if (l.at >= 0 && (!best || l.bucket[l.at]!.msg.seq > best.bucket[best.at]!.msg.seq)) best = l;
    }
    if (!best) return;
    yield { sub: best.sub, entry: best.bucket[best.at--]! };
  }
}

/** Highest priority first; within one priority, oldest first across all the subscriptions. */
function* byPriority(subs: readonly Subscription[]): Generator<Taken> {
  for (let p = PRIORITY_LEVELS - 1; p >= 0; p--) {
    const lists: Array<{ sub: Subscription; bucket: Entry[]; at: number }> = [];
    for (const sub of subs) if (sub.queue.buckets[p]!.length > 0) lists.push({ sub, bucket: sub.queue.buckets[p]!, at: 0 });
    if (lists.length === 1) {
      const { sub, bucket } = lists[0]!;
      for (const entry of bucket) yield { sub, entry };
      continue;
    }
    for (;;) {
      let best: (typeof lists)[number] | undefined;
      for (const l of lists) {
        if (l.at < l.bucket.length && (!best || l.bucket[l.at]!.msg.seq < best.bucket[best.at]!.msg.seq)) best = l;
      }
      if (!best) break;
      yield { sub: best.sub, entry: best.bucket[best.at++]! };
    }
  }
}
