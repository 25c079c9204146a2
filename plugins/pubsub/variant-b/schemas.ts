import { z } from 'zod';
import { expirationField, messageData, textField } from '../shared/fields.ts';
import { quickFields } from '../shared/quick-parse.ts';

/** Variant B (spec, Endpoints C). These schemas validate requests and generate the OpenAPI document. */

export const DEFAULT_EXPIRATION_B = 31_536_000;
export const MAX_MESSAGES_B = 1000;
export const MAX_LEN_B = 20_000_000;

export const publishRequestB = z
  .object({
    data: messageData,
    priority: z.number().int().min(0).max(9).default(5).describe('0 (lowest) to 9 (highest).'),
    expiration: expirationField.default(DEFAULT_EXPIRATION_B).describe('Seconds, counted from when the server receives the message. Default one year.'),
    correl_id: textField('Correlation ID; defaults to the CID of the request.'),
    in_reply_to: textField('ID of the message replied to.'),
    ext_client_id: textField('For logging and audit.'),
    pub_time: z.iso.datetime({ offset: true }).optional().describe('ISO 8601 with time zone; the current time when omitted.'),
  })
  .describe('Publish request; the topic name is only in the path.');

export const getRequestB = z
  .object({
    max_messages: z.number().int().min(1).max(MAX_MESSAGES_B).default(50).describe(`Most messages returned. Default 50, maximum ${MAX_MESSAGES_B}.`),
    max_len: z.number().int().min(1).max(MAX_LEN_B).default(MAX_LEN_B).describe(`Most bytes of message data returned in total. Default and maximum ${MAX_LEN_B}.`),
  })
  .describe('Get messages request; the body may be empty.');

const duration = z.string().regex(/^-?\d+:\d{2}:\d{2}\.\d{6}$/).describe('Duration, H:MM:SS.ffffff.');

export const metaB = z.object({
  topic_name: z.string(),
  size: z.number().int().describe('Bytes of data.'),
  priority: z.number().int().describe('0 to 9.'),
  expiration: z.number().int().describe('Seconds; 0 when the message never expires (published through variant A or the SDK without one).'),
  msg_id: z.string(),
  correl_id: z.string(),
  pub_time_iso: z.string().describe('ISO 8601 with time zone.'),
  recv_time_iso: z.string().describe('When the server received the message; ISO 8601 with time zone.'),
  expiration_time_iso: z.string().optional().describe('ISO 8601 with time zone; absent when the message never expires.'),
  time_since_pub: duration,
  time_since_recv: duration,
  ext_client_id: z.string().optional(),
  in_reply_to: z.string().optional(),
  sub_key: z.string().describe('Subscription key of the receiving user for the message\'s topic.'),
});

export const messageB = z.object({ data: z.unknown(), meta: metaB });

const statusText = z.string().describe('HTTP status description, such as `200 OK`.');

export const publishResponseB = z.object({
  is_ok: z.literal(true),
  cid: z.string(),
  msg_id: z.string(),
  status: statusText,
});

export const getResponseB = z.object({
  is_ok: z.literal(true),
  cid: z.string(),
  messages: z.array(messageB).describe('Possibly empty; highest priority first, oldest first within a priority.'),
  data: z.unknown().optional().describe('Present when exactly one message is returned (same as messages[0].data).'),
  meta: metaB.optional().describe('Present when exactly one message is returned (same as messages[0].meta).'),
  message_count: z.number().int(),
  status: statusText,
});

export const subscribeResponseB = z.object({
  is_ok: z.literal(true),
  cid: z.string(),
  sub_key: z.string(),
  queue_depth: z.number().int().optional().describe('Absent when the user was already subscribed.'),
  status: statusText,
});

export const unsubscribeResponseB = z.object({ is_ok: z.literal(true), cid: z.string(), status: statusText });

export const errorB = z.object({
  is_ok: z.literal(false),
  cid: z.string(),
  details: z.string().describe('Basic information only; full details are in the server log.'),
  status: statusText,
});

export type MetaB = z.infer<typeof metaB>;

export type PublishRequestB = z.infer<typeof publishRequestB>;

/** publishRequestB's result for a plainly valid body, without zod; undefined: let the schema decide (shared/quick-parse.ts). */
export function quickPublishB(body: unknown): PublishRequestB | undefined {
  const fields = quickFields(body, 0, DEFAULT_EXPIRATION_B);
  // pub_time needs the ISO 8601 check: the schema's.
  if (fields === undefined || (body as { pub_time?: unknown }).pub_time !== undefined) return undefined;
  return fields as PublishRequestB;
}
