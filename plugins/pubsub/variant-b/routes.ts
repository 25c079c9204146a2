import type { Exchange, PluginRoute } from '../../../sdk/plugin/index.ts';
import {
  describeFailure,
  mimeTypeOf,
  PubSubRefusal,
  replyWithDelivery,
  routeChannel,
  requirePublish,
  shownTo,
  statusLine,
  topicOf,
  subscribeCaller,
  unsubscribeCaller,
  type PubSubContext,
} from '../shared/http.ts';
import { toMetaB } from '../shared/projection.ts';
import { getRequestB, publishRequestB, quickPublishB, type MetaB, type PublishRequestB } from './schemas.ts';

export const PREFIX_B = '/pubsub';
const INVALID = 'Invalid request data';
const NO_SUBSCRIPTION = 'No subscription found for user';
const OK = statusLine(200);

/** Variant B's error body: `{is_ok: false, cid, details, status}` (spec, Errors 6). */
function failWith(operations: Record<string, string>) {
  return function failB(ex: Exchange, err: unknown): void {
    const { status, details, headers } = describeFailure(ex, err, operations[ex.method] ?? ex.method, INVALID);
    ex.reply(status, { is_ok: false, cid: ex.cid, details, status: statusLine(status) }, headers);
  };
}

function objectBody(body: unknown, what: string): Record<string, unknown> {
  if (body === undefined) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new PubSubRefusal('INVALID_INPUT', `${what}: the body is not a JSON object`, undefined, INVALID);
  return body as Record<string, unknown>;
}

function parsePublish(body: Record<string, unknown>, topic: string): PublishRequestB {
  const parsed = publishRequestB.safeParse(body);
  if (!parsed.success) throw new PubSubRefusal('INVALID_INPUT', `publish to '${topic}': ${parsed.error.message}`, undefined, INVALID);
  return parsed.data;
}

export function routesB(ctx: PubSubContext, plugin: string, now: () => number): PluginRoute[] {
  async function publish(ex: Exchange): Promise<void> {
    const endpoint = ctx.endpointOf(ex);
    const topic = topicOf(ex, endpoint);
    requirePublish(endpoint, topic, ctx.engine);
    const req = quickPublishB(ex.payload) ?? parsePublish(objectBody(ex.payload, 'publish'), topic);
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
  }

  async function getMessages(ex: Exchange): Promise<void> {
    const endpoint = ctx.endpointOf(ex);
    const parsed = getRequestB.safeParse(objectBody(ex.payload, 'get messages'));
    if (!parsed.success) throw new PubSubRefusal('INVALID_INPUT', `get messages: ${parsed.error.message}`, undefined, INVALID);
    const subKeys = await ctx.engine.subscriptionKeys(endpoint.name);
    if (subKeys.length === 0) throw new PubSubRefusal('UNAUTHORIZED', `endpoint '${endpoint.name}' has no subscription`, undefined, NO_SUBSCRIPTION);
    const delivery = await ctx.engine.take(subKeys, { order: 'priority', maxMessages: parsed.data.max_messages, maxBytes: parsed.data.max_len });
    const t = now();
    const messages = delivery.messages.map((m) => ({ data: m.data, meta: toMetaB(m, t) satisfies MetaB }));
    if (endpoint.tenant !== undefined) shownTo(endpoint, messages.map((m) => m.meta));
    const body: Record<string, unknown> = { is_ok: true, cid: ex.cid, messages, message_count: messages.length, status: OK };
    if (messages.length === 1) {
      body.data = messages[0]!.data;
      body.meta = messages[0]!.meta;
    }
    replyWithDelivery(ex, body, delivery, { endpoint: endpoint.name });
  }

  async function subscribe(ex: Exchange): Promise<void> {
    const result = await subscribeCaller(ctx, ex);
    ex.reply(200, result.created ? { is_ok: true, cid: ex.cid, sub_key: result.subKey, queue_depth: result.queueDepth, status: OK } : { is_ok: true, cid: ex.cid, sub_key: result.subKey, status: OK });
  }

  async function unsubscribe(ex: Exchange): Promise<void> {
    await unsubscribeCaller(ctx, ex);
    ex.reply(200, { is_ok: true, cid: ex.cid, status: OK });
  }

  // Wrong methods are answered by the kernel's 405, in B's body shape through onError.
  const channel = routeChannel(plugin);
  const byMethod = (handlers: Record<string, (ex: Exchange) => void | Promise<void>>) => (ex: Exchange) => handlers[ex.method]!(ex);
  return [
    { name: 'pubsub-b publish', method: 'POST', url: `${PREFIX_B}/topic/*`, channel, handler: publish, onError: failWith({ POST: 'publish' }) },
    { name: 'pubsub-b get', method: 'POST', url: `${PREFIX_B}/messages/get`, channel, handler: getMessages, onError: failWith({ POST: 'get messages' }) },
    {
      name: 'pubsub-b subscription',
      method: ['POST', 'DELETE'],
      url: `${PREFIX_B}/subscribe/topic/*`,
      channel,
      handler: byMethod({ POST: subscribe, DELETE: unsubscribe }),
      onError: failWith({ POST: 'subscribe', DELETE: 'unsubscribe' }),
    },
  ];
}
