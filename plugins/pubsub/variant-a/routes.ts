import { errorBody } from '../../../sdk/plugin/index.ts';
import type { Exchange } from '../../../sdk/plugin/index.ts';
import type { PluginRoute } from '../../../sdk/plugin/index.ts';
import {
  describeFailure,
  mimeTypeOf,
  PubSubRefusal,
  replyWithDelivery,
  routeChannel,
  requirePublish,
  shownTo,
  topicOf,
  subscribeCaller,
  unsubscribeCaller,
  type PubSubContext,
} from '../shared/http.ts';
import { AnswerTurns } from '../shared/answer-turns.ts';
import { toMessageA } from '../shared/projection.ts';
import { publishRequestA, quickPublishA, type MessageA, type PublishRequestA } from './schemas.ts';

export const PREFIX_A = '/svc/pubsub';
const INVALID = 'Invalid input';
/** A get returns every queued message, but never more data than this in one response. */
export const MAX_GET_BYTES_A = 20_000_000;

/** Variant A answers errors in svc's own body, `{cid, details}`, with the basic reason only. */
function failWith(operations: Record<string, string>) {
  return function failA(ex: Exchange, err: unknown): void {
    const { status, details, headers } = describeFailure(ex, err, operations[ex.method] ?? ex.method, INVALID);
    ex.reply(status, errorBody(ex.cid, details), headers);
  };
}

function parsePublish(body: unknown, topic: string): PublishRequestA {
  const parsed = publishRequestA.safeParse(body);
  if (!parsed.success) throw new PubSubRefusal('INVALID_INPUT', `publish to '${topic}': ${parsed.error.message}`, undefined, INVALID);
  return parsed.data;
}

export function routesA(ctx: PubSubContext, plugin: string): PluginRoute[] {
  // GD publishes are answered together already, when the flush that covers them ends.
  const quickAnswers = new AnswerTurns();

  async function publish(ex: Exchange): Promise<void> {
    const endpoint = ctx.endpointOf(ex);
    const topic = topicOf(ex, endpoint);
    requirePublish(endpoint, topic, ctx.engine);
    const req = quickPublishA(ex.payload ?? {}) ?? parsePublish(ex.payload ?? {}, topic);
    const { msgId } = await ctx.engine.publish({
      topic,
      data: req.data,
      mimeType: mimeTypeOf(ex.headers['content-type']),
      priority: req.priority,
      expiration: req.expiration,
      correlId: req.correl_id,
      inReplyTo: req.in_reply_to,
      extClientId: req.ext_client_id,
      hasGd: req.has_gd,
      publisher: endpoint.name,
    });
    if (!req.has_gd) await quickAnswers.next();
    ex.reply(200, { msg_id: msgId });
  }

  async function getMessages(ex: Exchange): Promise<void> {
    const endpoint = ctx.endpointOf(ex);
    const topic = topicOf(ex, endpoint);
    const subKey = await ctx.engine.subscriptionKey(endpoint.name, topic);
    if (subKey === undefined) {
      ex.log.info({ endpoint: endpoint.name, topic }, 'pubsub: get messages without a subscription, returning an empty list');
      ex.reply(200, []);
      return;
    }
    const delivery = await ctx.engine.take([subKey], { order: 'lifo', maxMessages: Infinity, maxBytes: MAX_GET_BYTES_A });
    replyWithDelivery(ex, shownTo(endpoint, delivery.messages.map(toMessageA)) satisfies MessageA[], delivery, { endpoint: endpoint.name, topic });
  }

  async function subscribe(ex: Exchange): Promise<void> {
    const result = await subscribeCaller(ctx, ex);
    ex.reply(200, result.created ? { sub_key: result.subKey, queue_depth: result.queueDepth } : { sub_key: result.subKey });
  }

  async function unsubscribe(ex: Exchange): Promise<void> {
    await unsubscribeCaller(ctx, ex);
    ex.reply(200, {});
  }

  const channel = routeChannel(plugin);
  const byMethod = (handlers: Record<string, (ex: Exchange) => void | Promise<void>>) => (ex: Exchange) => handlers[ex.method]!(ex);
  return [
    {
      name: 'pubsub-a topic',
      method: ['POST', 'PATCH'],
      url: `${PREFIX_A}/topic/*`,
      channel,
      handler: byMethod({ POST: publish, PATCH: getMessages }),
      onError: failWith({ POST: 'publish', PATCH: 'get messages' }),
    },
    {
      name: 'pubsub-a subscription',
      method: ['POST', 'DELETE'],
      url: `${PREFIX_A}/subscribe/topic/*`,
      channel,
      handler: byMethod({ POST: subscribe, DELETE: unsubscribe }),
      onError: failWith({ POST: 'subscribe', DELETE: 'unsubscribe' }),
    },
  ];
}
