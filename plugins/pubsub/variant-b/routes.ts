import { HTTP_METHODS, type Exchange, type SystemRoute } from '../../../sdk/plugin/index.ts';
import {
  describeFailure,
  mimeTypeOf,
  PubSubRefusal,
  readJson,
  replyWithDelivery,
  requirePublish,
  statusLine,
  topicOf,
  subscribeCaller,
  unsubscribeCaller,
  type PubSubContext,
} from '../shared/http.ts';
import { toMetaB } from '../shared/projection.ts';
import { getRequestB, publishRequestB, type MetaB } from './schemas.ts';

export const PREFIX_B = '/pubsub';
const INVALID = 'Invalid request data';
const NO_SUBSCRIPTION = 'No subscription found for user';
const OK = statusLine(200);

/** Variant B's error body: `{is_ok: false, cid, details, status}` (spec, Errors 6). */
function fail(ex: Exchange, err: unknown, operation: string): void {
  const { status, details, headers } = describeFailure(ex, err, operation);
  ex.reply(status, { is_ok: false, cid: ex.cid, details, status: statusLine(status) }, headers);
}

function objectBody(body: unknown, what: string): Record<string, unknown> {
  if (body === undefined) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new PubSubRefusal('INVALID_INPUT', `${what}: the body is not a JSON object`, undefined, INVALID);
  return body as Record<string, unknown>;
}

export function routesB(ctx: PubSubContext, now: () => number): SystemRoute[] {
  async function publish(ex: Exchange): Promise<void> {
    try {
      const endpoint = await ctx.identify(ex);
      const topic = topicOf(ex);
      requirePublish(endpoint, topic, ctx.engine);
      const parsed = publishRequestB.safeParse(objectBody(await readJson(ex, INVALID), 'publish'));
      if (!parsed.success) throw new PubSubRefusal('INVALID_INPUT', `publish to '${topic}': ${parsed.error.message}`, undefined, INVALID);
      const req = parsed.data;
      const { msgId } = await ctx.engine.publish({
        topic,
        data: req.data,
        mimeType: mimeTypeOf(ex.headers['content-type']),
        priority: req.priority,
        expiration: req.expiration,
        correlId: req.correl_id ?? ex.cid,
        inReplyTo: req.in_reply_to,
        extClientId: req.ext_client_id,
        hasGd: true,
        pubTime: req.pub_time === undefined ? undefined : Date.parse(req.pub_time),
        publisher: endpoint.name,
      });
      ex.reply(200, { is_ok: true, cid: ex.cid, msg_id: msgId, status: OK });
    } catch (err) {
      fail(ex, err, 'publish');
    }
  }

  async function getMessages(ex: Exchange): Promise<void> {
    try {
      const endpoint = await ctx.identify(ex);
      const parsed = getRequestB.safeParse(objectBody(await readJson(ex, INVALID), 'get messages'));
      if (!parsed.success) throw new PubSubRefusal('INVALID_INPUT', `get messages: ${parsed.error.message}`, undefined, INVALID);
      const subKeys = ctx.engine.subscriptionKeys(endpoint.name);
      if (subKeys.length === 0) throw new PubSubRefusal('UNAUTHORIZED', `endpoint '${endpoint.name}' has no subscription`, undefined, NO_SUBSCRIPTION);
      const delivery = ctx.engine.take(subKeys, { order: 'priority', maxMessages: parsed.data.max_messages, maxBytes: parsed.data.max_len });
      const t = now();
      const messages = delivery.messages.map((m) => ({ data: m.data, meta: toMetaB(m, t) satisfies MetaB }));
      const body: Record<string, unknown> = { is_ok: true, cid: ex.cid, messages, message_count: messages.length, status: OK };
      if (messages.length === 1) {
        body.data = messages[0]!.data;
        body.meta = messages[0]!.meta;
      }
      replyWithDelivery(ex, body, delivery, { endpoint: endpoint.name });
    } catch (err) {
      fail(ex, err, 'get messages');
    }
  }

  async function subscribe(ex: Exchange): Promise<void> {
    try {
      const result = await subscribeCaller(ctx, ex);
      ex.reply(200, result.created ? { is_ok: true, cid: ex.cid, sub_key: result.subKey, queue_depth: result.queueDepth, status: OK } : { is_ok: true, cid: ex.cid, sub_key: result.subKey, status: OK });
    } catch (err) {
      fail(ex, err, 'subscribe');
    }
  }

  async function unsubscribe(ex: Exchange): Promise<void> {
    try {
      await unsubscribeCaller(ctx, ex);
      ex.reply(200, { is_ok: true, cid: ex.cid, status: OK });
    } catch (err) {
      fail(ex, err, 'unsubscribe');
    }
  }

  /** B answers wrong methods in its own body shape. */
  const byMethod = (handlers: Record<string, (ex: Exchange) => Promise<void>>) => {
    const allow = Object.keys(handlers).join(', ');
    return (ex: Exchange) => {
      const handler = handlers[ex.method];
      if (handler) return handler(ex);
      ex.reply(405, { is_ok: false, cid: ex.cid, details: 'Method not allowed', status: statusLine(405) }, { allow });
      return undefined;
    };
  };
  const ALL = HTTP_METHODS;
  return [
    { name: 'pubsub-b publish', method: ALL, url: `${PREFIX_B}/topic/*`, handler: byMethod({ POST: publish }) },
    { name: 'pubsub-b get', method: ALL, url: `${PREFIX_B}/messages/get`, handler: byMethod({ POST: getMessages }) },
    { name: 'pubsub-b subscription', method: ALL, url: `${PREFIX_B}/subscribe/topic/*`, handler: byMethod({ POST: subscribe, DELETE: unsubscribe }) },
  ];
}
