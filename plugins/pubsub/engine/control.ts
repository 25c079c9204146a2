import { createHash } from 'node:crypto';
import { z } from 'zod';
import { scopedRef, SvcError, tenantOf, type ControlOp, type OpCaller } from '../../../sdk/plugin/index.ts';
import { isStoredTopicName, topicTenant } from '../shared/patterns.ts';
import type { PubSubStrategy, SubscriptionInfo } from './strategy.ts';

/**
 * The operators' view of pub/sub as control ops (admin API, Dashboard, control socket): topics,
 * subscriptions, a browser of queued messages that takes nothing, and subscribe/unsubscribe on
 * an endpoint's behalf. A sub_key is a secret: it never leaves here whole. Subscriptions are
 * named by an opaque id (a hash of the key) or by endpoint and topic.
 *
 * A tenant's administrators (admin API) run them on their tenant's pub/sub only: its topics, and
 * the subscriptions of its endpoints (which reach its topics only). Names are shown qualified
 * (`acme/orders`), as the admin API shows every name; another tenant's is not found.
 */

/** Characters of data shown by the message browser. */
export const PREVIEW_CHARS = 200;
const SUB_KEY_PREFIX = 'svcpsk.';

/** Stable across restarts (the key is stored), and the key cannot be found from it. */
export function subscriptionId(subKey: string): string {
  return createHash('sha256').update(subKey).digest('hex').slice(0, 20);
}

/** Enough to tell keys apart in a list: the fixed prefix and 4 of the 32 random characters. */
export function maskSubKey(subKey: string): string {
  const shown = subKey.startsWith(SUB_KEY_PREFIX) ? SUB_KEY_PREFIX.length + 4 : 4;
  return `${subKey.slice(0, shown)}…`;
}

// Marked as references: the admin API qualifies a tenant administrator's `/orders` to its tenant's `acme/orders`.
const topicField = scopedRef(z.string().min(1).max(240).refine(isStoredTopicName, 'a topic name: /segment/segment..., no wildcards')).describe('Topic name, e.g. /orders/new.');
const endpointField = scopedRef(z.string().min(1).max(240)).describe('Pub/sub endpoint name (pubsub_endpoint[].name).');
const idField = z.string().regex(/^[0-9a-f]{20}$/, 'a subscription id as pubsub.subscriptions lists it (20 hex characters)').describe('Subscription id from pubsub.subscriptions.');

export const topicsArgs = z.object({}).strict();

export const subscriptionsArgs = z
  .object({
    topic: topicField.optional().describe('Only subscriptions to this topic.'),
    endpoint: endpointField.optional().describe('Only subscriptions of this endpoint.'),
  })
  .strict();

/** One subscription: by id, or by endpoint and topic. */
const selector = {
  id: idField.optional().describe('The subscription id from pubsub.subscriptions (instead of endpoint and topic).'),
  endpoint: endpointField.optional().describe('With topic: the subscription of this endpoint (instead of id).'),
  topic: topicField.optional().describe('With endpoint: the subscription to this topic (instead of id).'),
};
const oneSubscription = (s: { id?: string | undefined; endpoint?: string | undefined; topic?: string | undefined }) =>
  (s.id !== undefined) !== (s.endpoint !== undefined && s.topic !== undefined) && (s.id === undefined || (s.endpoint === undefined && s.topic === undefined));
const ONE_SUBSCRIPTION = 'name the subscription by id, or by endpoint and topic';

export const messagesArgs = z
  .object({ ...selector, limit: z.number().int().min(1).max(100).default(20).describe('Most messages shown, in delivery order (highest priority first, oldest first within one).') })
  .strict()
  .refine(oneSubscription, ONE_SUBSCRIPTION);

export const subscribeArgs = z.object({ endpoint: endpointField, topic: topicField }).strict();

export const unsubscribeArgs = z.object(selector).strict().refine(oneSubscription, ONE_SUBSCRIPTION);

export async function subscriptionView(engine: PubSubStrategy, sub: SubscriptionInfo) {
  return {
    id: subscriptionId(sub.subKey),
    endpoint: sub.endpoint,
    topic: sub.topic,
    sub_key: maskSubKey(sub.subKey),
    source: sub.source,
    queue_depth: await engine.queueDepth(sub.subKey),
    creation_time_iso: new Date(sub.createdAt).toISOString(),
  };
}

/** Whether the caller reaches it: a platform administrator everything, a tenant's its tenant's. */
function reaches(caller: OpCaller | undefined, owner: string | undefined): boolean {
  return caller === undefined || owner === caller.tenant;
}

async function subscriptionsOf(engine: PubSubStrategy, caller: OpCaller | undefined): Promise<readonly SubscriptionInfo[]> {
  const all = await engine.subscriptionList();
  return caller === undefined ? all : all.filter((s) => reaches(caller, tenantOf(s.endpoint)));
}

async function find(engine: PubSubStrategy, s: { id?: string | undefined; endpoint?: string | undefined; topic?: string | undefined }, caller: OpCaller | undefined): Promise<SubscriptionInfo> {
  const sub = (await subscriptionsOf(engine, caller)).find((x) => (s.id !== undefined ? subscriptionId(x.subKey) === s.id : x.endpoint === s.endpoint && x.topic === s.topic));
  if (!sub) throw new SvcError('NOT_FOUND', s.id !== undefined ? `no subscription with id ${s.id}` : `endpoint '${s.endpoint}' has no subscription to '${s.topic}'`);
  return sub;
}

function preview(text: string): { data_preview: string; truncated: boolean } {
  return text.length > PREVIEW_CHARS ? { data_preview: `${text.slice(0, PREVIEW_CHARS)}…`, truncated: true } : { data_preview: text, truncated: false };
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

export function pubsubControls(engine: PubSubStrategy): ControlOp[] {
  return [
    {
      op: 'pubsub.topics',
      readOnly: true,
      tenantScoped: true,
      args: topicsArgs,
      handler: async (_args, caller) =>
        (await engine.topicList())
          .filter((t) => reaches(caller, topicTenant(t.name)))
          .sort((a, b) => a.name.localeCompare(b.name))
          .map((t) => ({ name: t.name, max_depth: t.maxDepth, in_memory_only: t.ephemeral, subscriptions: t.subscriptions, retained: t.retained, queued: t.queued })),
    },
    {
      op: 'pubsub.subscriptions',
      readOnly: true,
      tenantScoped: true,
      args: subscriptionsArgs,
      handler: async ({ topic, endpoint }: z.infer<typeof subscriptionsArgs>, caller) =>
        Promise.all(
          (await subscriptionsOf(engine, caller))
            .filter((s) => (topic === undefined || s.topic === topic) && (endpoint === undefined || s.endpoint === endpoint))
            .sort((a, b) => a.endpoint.localeCompare(b.endpoint) || a.topic.localeCompare(b.topic))
            .map((s) => subscriptionView(engine, s)),
        ),
    },
    {
      op: 'pubsub.messages',
      readOnly: true,
      tenantScoped: true,
      args: messagesArgs,
      handler: async (args: z.infer<typeof messagesArgs>, caller) => {
        const sub = await find(engine, args, caller);
        const messages = (await engine.peek(sub.subKey, args.limit)).map(({ msg, deliveryCount }) => ({
          msg_id: msg.msgId,
          ...preview(typeof msg.data === 'string' ? msg.data : msg.dataJson),
          size: msg.size,
          mime_type: msg.mimeType,
          priority: msg.priority,
          pub_time_iso: iso(msg.pubTime),
          recv_time_iso: iso(msg.recvTime),
          expiration: msg.expiration ?? null,
          expiration_time_iso: iso(msg.expiresAt),
          delivery_count: deliveryCount,
          correl_id: msg.correlId ?? null,
          publisher: msg.publisher,
        }));
        return { subscription: await subscriptionView(engine, sub), messages };
      },
    },
    {
      op: 'pubsub.subscribe',
      tenantScoped: true,
      args: subscribeArgs,
      handler: async ({ endpoint, topic }: z.infer<typeof subscribeArgs>, caller) => {
        // The checks of the REST subscribe (shared/http.ts requireSubscribe), with the reason spelled out.
        const ep = engine.endpointNamed(endpoint);
        if (!ep || !reaches(caller, ep.tenant)) throw new SvcError('NOT_FOUND', `no pub/sub endpoint '${endpoint}'`);
        if (!ep.canSubscribe(topic)) throw new SvcError('FORBIDDEN', `endpoint '${endpoint}' has no subscription permission for '${topic}'`);
        if (!engine.hasTopic(topic)) throw new SvcError('NOT_FOUND', `no topic '${topic}'`);
        const { subKey, created } = await engine.subscribe(endpoint, topic);
        const sub = (await engine.subscriptionList()).find((s) => s.subKey === subKey);
        if (!sub) throw new SvcError('CONFLICT', 'the subscription was removed while it was being made (a config reload?)');
        return { created, ...(await subscriptionView(engine, sub)) };
      },
    },
    {
      op: 'pubsub.unsubscribe',
      tenantScoped: true,
      args: unsubscribeArgs,
      handler: async (args: z.infer<typeof unsubscribeArgs>, caller) => {
        const sub = await find(engine, args, caller);
        const queued = await engine.queueDepth(sub.subKey);
        await engine.unsubscribe(sub.endpoint, sub.topic);
        return { unsubscribed: true, id: subscriptionId(sub.subKey), endpoint: sub.endpoint, topic: sub.topic, messages_deleted: queued };
      },
    },
  ];
}
