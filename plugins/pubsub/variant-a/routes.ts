import { errorBody } from '../../../sdk/plugin/index.ts';
import type { Exchange } from '../../../sdk/plugin/index.ts';
import type { SystemRoute } from '../../../sdk/plugin/index.ts';
import {
  describeFailure,
  mimeTypeOf,
  PubSubRefusal,
  readJson,
  replyWithDelivery,
  requirePublish,
  topicOf,
  subscribeCaller,
  unsubscribeCaller,
  type PubSubContext,
} from '../shared/http.ts';
import { toMessageA } from '../shared/projection.ts';
import { publishRequestA, type MessageA } from './schemas.ts';

export const PREFIX_A = '/svc/pubsub';
const INVALID = 'Invalid input';
/** A get returns every queued message, but never more data than this in one response. */
export const MAX_GET_BYTES_A = 20_000_000;

function fail(ex: Exchange, err: unknown, operation: string): void {
  const { status, details, headers } = describeFailure(ex, err, operation);
  ex.reply(status, errorBody(ex.cid, details), headers);
}

export function routesA(ctx: PubSubContext): SystemRoute[] {
  async function publish(ex: Exchange): Promise<void> {
    try {
      const endpoint = await ctx.identify(ex);
      const topic = topicOf(ex);
      requirePublish(endpoint, topic, ctx.engine);
      const body = await readJson(ex, INVALID);
      const parsed = publishRequestA.safeParse(body ?? {});
      if (!parsed.success) throw new PubSubRefusal('INVALID_INPUT', `publish to '${topic}': ${parsed.error.message}`, undefined, INVALID);
      const req = parsed.data;
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
      ex.reply(200, { msg_id: msgId });
    } catch (err) {
      fail(ex, err, 'publish');
    }
  }

  async function getMessages(ex: Exchange): Promise<void> {
    try {
      const endpoint = await ctx.identify(ex);
      const topic = topicOf(ex);
      const subKey = ctx.engine.subscriptionKey(endpoint.name, topic);
      if (subKey === undefined) {
        ex.log.info({ endpoint: endpoint.name, topic }, 'pubsub: get messages without a subscription, returning an empty list');
        ex.reply(200, []);
        return;
      }
      const delivery = ctx.engine.take([subKey], { order: 'lifo', maxMessages: Infinity, maxBytes: MAX_GET_BYTES_A });
      replyWithDelivery(ex, delivery.messages.map(toMessageA) satisfies MessageA[], delivery, { endpoint: endpoint.name, topic });
    } catch (err) {
      fail(ex, err, 'get messages');
    }
  }

  async function subscribe(ex: Exchange): Promise<void> {
    try {
      const result = await subscribeCaller(ctx, ex);
      ex.reply(200, result.created ? { sub_key: result.subKey, queue_depth: result.queueDepth } : { sub_key: result.subKey });
    } catch (err) {
      fail(ex, err, 'subscribe');
    }
  }

  async function unsubscribe(ex: Exchange): Promise<void> {
    try {
      await unsubscribeCaller(ctx, ex);
      ex.reply(200, {});
    } catch (err) {
      fail(ex, err, 'unsubscribe');
    }
  }

  const byMethod = (handlers: Record<string, (ex: Exchange) => Promise<void>>) => (ex: Exchange) => handlers[ex.method]!(ex);
  return [
    {
      name: 'pubsub-a topic',
      method: ['POST', 'PATCH'],
      url: `${PREFIX_A}/topic/*`,
      handler: byMethod({ POST: publish, PATCH: getMessages }),
    },
    {
      name: 'pubsub-a subscription',
      method: ['POST', 'DELETE'],
      url: `${PREFIX_A}/subscribe/topic/*`,
      handler: byMethod({ POST: subscribe, DELETE: unsubscribe }),
    },
  ];
}
