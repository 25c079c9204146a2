import type { OpenApiFragment } from '../../../sdk/plugin/index.ts';
import { AUTH, COMMON, errors, json, jsonSchema, ref, topicParam, type Json } from '../shared/openapi.ts';
import * as A from './schemas.ts';

/** Variant A's part of the pub/sub OpenAPI document, from the zod schemas its routes validate with. */
export function openApiA(): OpenApiFragment {
  const a = (summary: string, extra: Json) => ({ tags: ['Variant A'], summary, parameters: [topicParam], security: [{ basicAuth: [] }], ...extra });
  return {
    tags: [{ name: 'Variant A' }],
    schemas: {
      PublishRequestA: jsonSchema(A.publishRequestA, 'input'),
      PublishResponseA: jsonSchema(A.publishResponseA, 'output'),
      MessageA: jsonSchema(A.messageA, 'output'),
      GetResponseA: { type: 'array', items: ref('MessageA'), description: A.getResponseA.description },
      SubscribeResponseA: jsonSchema(A.subscribeResponseA, 'output'),
      UnsubscribeResponseA: jsonSchema(A.unsubscribeResponseA, 'output'),
      ErrorA: jsonSchema(A.errorA, 'output'),
    },
    paths: {
      '/svc/pubsub/topic/{topic_name}': {
        post: a('Publish a message', {
          operationId: 'publishA',
          requestBody: {
            required: true,
            description: 'JSON. A body sent as application/x-www-form-urlencoded is read as JSON too and its MIME type recorded as text/json.',
            content: { 'application/json': { schema: ref('PublishRequestA') }, 'application/x-www-form-urlencoded': { schema: ref('PublishRequestA') } },
          },
          responses: {
            200: json('PublishResponseA', 'Published.'),
            ...errors('ErrorA', { 400: 'Invalid input (no data, wrong type or out-of-range value)', ...AUTH, 403: 'no publication permission', 404: 'no such topic', 413: 'body too large', ...COMMON, 503: 'a subscriber queue of the topic is full (max_depth)' }),
          },
        }),
        patch: a('Get messages', {
          operationId: 'getMessagesA',
          description: 'Returns the queued messages of the caller\'s subscription to the topic, most recently published first; an empty list when none is queued or there is no subscription.',
          responses: { 200: json('GetResponseA', 'Messages (possibly none).'), ...errors('ErrorA', { ...AUTH, 404: 'not a topic name', ...COMMON }) },
        }),
      },
      '/svc/pubsub/subscribe/topic/{topic_name}': {
        post: a('Subscribe', {
          operationId: 'subscribeA',
          responses: {
            200: json('SubscribeResponseA', 'Subscribed; queue_depth is absent when the caller already was.'),
            ...errors('ErrorA', { ...AUTH, 403: 'no subscription permission', 404: 'no such topic', ...COMMON }),
          },
        }),
        delete: a('Unsubscribe', {
          operationId: 'unsubscribeA',
          responses: { 200: json('UnsubscribeResponseA', 'Unsubscribed, or there was nothing to unsubscribe from.'), ...errors('ErrorA', { ...AUTH, 404: 'not a topic name', ...COMMON }) },
        }),
      },
    },
  };
}
