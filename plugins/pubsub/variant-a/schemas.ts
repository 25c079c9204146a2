import { z } from 'zod';
import { expirationField, messageData, textField } from '../shared/fields.ts';
import { quickFields, type QuickFields } from '../shared/quick-parse.ts';

/** Variant A (spec, Endpoints B). These schemas validate requests and generate the OpenAPI document. */

export const publishRequestA = z
  .object({
    data: messageData,
    priority: z.number().int().min(1).max(9).default(5).describe('1 (lowest) to 9.'),
    expiration: expirationField.optional().describe('Seconds until the message expires; none: it never expires.'),
    correl_id: textField('Correlates a series of messages.'),
    in_reply_to: textField('Message ID of the message being replied to.'),
    ext_client_id: textField('Identifies the calling application or instance; for logging and audit.'),
    has_gd: z.boolean().default(false).describe('Guaranteed Delivery: the message is on stable storage before the response.'),
  })
  .describe('Publish request; the topic name is only in the path.');

export const publishResponseA = z.object({ msg_id: z.string().describe('ID of the published message.') });

export const messageA = z.object({
  data: z.unknown().describe('Message content as published.'),
  delivery_count: z.number().int().describe('Earlier deliveries whose response could not be written.'),
  expiration: z.number().int().describe('Seconds; 0 when the message never expires.'),
  expiration_time_iso: z.string().optional().describe('ISO 8601; absent when the message never expires.'),
  ext_client_id: z.string().describe('As published; empty when none was given.'),
  has_gd: z.boolean(),
  mime_type: z.string().describe('From the publisher\'s Content-Type; application/x-www-form-urlencoded is recorded as text/json.'),
  msg_id: z.string(),
  correl_id: z.string().optional(),
  in_reply_to: z.string().optional(),
  priority: z.number().int(),
  pub_time_iso: z.string().describe('ISO 8601 with time zone.'),
  size: z.number().int().describe('Bytes of data.'),
  sub_key: z.string().describe('The current subscription key.'),
  topic_name: z.string(),
});

export const getResponseA = z.array(messageA).describe('Queued messages, most recently published first; empty when none is queued or there is no subscription.');

export const subscribeResponseA = z.object({
  sub_key: z.string().describe('Subscription key (a secret).'),
  queue_depth: z.number().int().optional().describe('Messages already queued; absent when the caller was already subscribed.'),
});

export const unsubscribeResponseA = z.object({}).describe('Empty object, whether or not a subscription existed.');

export const errorA = z.object({
  result: z.literal('Error'),
  cid: z.string().describe('Correlation ID, also in the X-Svc-CID header.'),
  details: z.string().describe('Basic information only; full details are in the server log.'),
});

export type PublishRequestA = z.infer<typeof publishRequestA>;
export type MessageA = z.infer<typeof messageA>;

/** publishRequestA's result for a plainly valid body, without zod; undefined: let the schema decide (shared/quick-parse.ts). */
export function quickPublishA(body: unknown): PublishRequestA | undefined {
  const fields = quickFields(body, 1, undefined);
  if (fields === undefined) return undefined;
  const hasGd = (body as { has_gd?: unknown }).has_gd;
  if (hasGd !== undefined && typeof hasGd !== 'boolean') return undefined;
  // Assigned, not spread into a new object: the spread measured ten times the cost of the whole check.
  const req = fields as QuickFields & { has_gd: boolean };
  req.has_gd = hasGd ?? false;
  return req as PublishRequestA;
}
