import { callHost } from './internal/runtime.ts';

/** Options of a publication from a service (names as in the REST API, variant B ranges). */
export interface PublishOptions {
  /** 0 (lowest) to 9; default 5. */
  priority?: number;
  /** Seconds until the message expires; default: never. */
  expiration?: number;
  /** Default: the CID of the calling request. */
  correlId?: string;
  inReplyTo?: string;
  extClientId?: string;
  /** Guaranteed Delivery: on stable storage before publish() resolves. Default true. */
  hasGd?: boolean;
  mimeType?: string;
  /** The request this publication belongs to, when several run at once in one service. */
  cid?: string;
}

/**
 * Publishes a message to a topic. The service needs a `pubsub_endpoint` whose `services:` lists
 * it and whose `pub:` patterns grant the topic; otherwise this throws Forbidden. A tenant's
 * service names its tenant's topics as its config does (`/orders`), and reaches no other's.
 */
export async function publish(topic: string, data: unknown, options: PublishOptions = {}): Promise<{ msgId: string }> {
  const opts: Record<string, unknown> = {};
  if (options.priority !== undefined) opts.priority = options.priority;
  if (options.expiration !== undefined) opts.expiration = options.expiration;
  if (options.correlId !== undefined) opts.correl_id = options.correlId;
  if (options.inReplyTo !== undefined) opts.in_reply_to = options.inReplyTo;
  if (options.extClientId !== undefined) opts.ext_client_id = options.extClientId;
  if (options.hasGd !== undefined) opts.has_gd = options.hasGd;
  if (options.mimeType !== undefined) opts.mime_type = options.mimeType;
  const reply = (await callHost('pubsub.publish', { topic, data, opts }, options.cid)) as { msg_id: string };
  return { msgId: reply.msg_id };
}
