import type { PubSubEndpointView, PubSubEngineApi } from '../../capabilities.ts';
import type { Entry, ResourceSet, Subscription, TopicInfo } from './model.ts';

/** A subscription as the operators' ops show it: no queue attached. */
export type SubscriptionInfo = Pick<Subscription, 'subKey' | 'endpoint' | 'topic' | 'source' | 'createdAt'>;

/** A queued message as the message browser shows it. */
export type PeekedEntry = Pick<Entry, 'msg' | 'deliveryCount'>;

/**
 * What the plugin, its control ops and `svc demo` need of an engine, whichever keeps the queues:
 * memory with the store as a copy for restarts (engine.ts, one node on SQLite), or PostgreSQL
 * itself, shared by several nodes (cluster.ts). The variants see only PubSubEngineApi.
 * Answers that need the database may come as promises: callers await them.
 */
export interface PubSubStrategy extends PubSubEngineApi {
  /** The configured resources (config plus built-ins); replaces the previous set. */
  applyConfig(resources: ResourceSet): Promise<void>;
  /** Resources held by this node's memory only (`svc demo`); they survive config reloads, not restarts. */
  addEphemeral(resources: ResourceSet): Promise<void>;
  endpointForService(service: string, topic: string): PubSubEndpointView | undefined;
  endpointNamed(name: string): PubSubEndpointView | undefined;
  topicList(): TopicInfo[] | Promise<TopicInfo[]>;
  subscriptionList(): readonly SubscriptionInfo[] | Promise<readonly SubscriptionInfo[]>;
  queueDepth(subKey: string): number | Promise<number>;
  /** Up to `limit` live messages of a subscription in variant B's order, without taking them. */
  peek(subKey: string, limit: number): PeekedEntry[] | Promise<PeekedEntry[]>;
  /** Removes expired messages; resolves how many queue entries went. */
  sweep(): number | Promise<number>;
  /** Resolves once background writes started so far have finished. */
  idle(): Promise<void>;
  close(): Promise<void>;
}
