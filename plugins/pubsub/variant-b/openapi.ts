import type { OpenApiFragment } from '../../../sdk/plugin/index.ts';
import { AUTH, COMMON, errors, json, jsonSchema, ref, topicParam, type Json } from '../shared/openapi.ts';
import * as B from './schemas.ts';

/** Variant B's part of the pub/sub OpenAPI document, from the zod schemas its routes validate with. */
export function openApiB(): OpenApiFragment {
  const b = (summary: string, extra: Json) => ({ tags: ['Variant B'], summary, security: [{ basicAuth: [] }], ...extra });
  return {
    tags: [{ name: 'Variant B' }],
    schemas: {
      PublishRequestB: jsonSchema(B.publishRequestB, 'input'),
      PublishResponseB: jsonSchema(B.publishResponseB, 'output'),
      GetRequestB: jsonSchema(B.getRequestB, 'input'),
      GetResponseB: jsonSchema(B.getResponseB, 'output'),
      SubscribeResponseB: jsonSchema(B.subscribeResponseB, 'output'),
      UnsubscribeResponseB: jsonSchema(B.unsubscribeResponseB, 'output'),
      ErrorB: jsonSchema(B.errorB, 'output'),
    },
    paths: {
      '/pubsub/topic/{topic_name}': {
        post: b('Publish a message', {
          operationId: 'publishB',
          parameters: [topicParam],
          requestBody: { required: true, content: { 'application/json': { schema: ref('PublishRequestB') } } },
          responses: {
            200: json('PublishResponseB', 'Published (on stable storage).'),
            ...errors('ErrorB', { 400: 'Invalid request data', ...AUTH, 403: 'no publication permission', 404: 'no such topic', 405: 'method not allowed', 413: 'body too large', ...COMMON, 503: 'a subscriber queue of the topic is full (max_depth)' }),
          },
        }),
      },
      '/pubsub/messages/get': {
        post: b('Get messages', {
          operationId: 'getMessagesB',
          description: 'One queue per user across all subscribed topics: highest priority first, oldest first within a priority.',
          requestBody: { required: false, content: { 'application/json': { schema: ref('GetRequestB') } } },
          responses: {
            200: json('GetResponseB', 'Messages (possibly none).'),
            ...errors('ErrorB', { 400: 'Invalid request data', 401: "credentials missing or wrong, or 'No subscription found for user'", 405: 'method not allowed', ...COMMON }),
          },
        }),
      },
      '/pubsub/subscribe/topic/{topic_name}': {
        post: b('Subscribe (svc extension)', {
          operationId: 'subscribeB',
          parameters: [topicParam],
          responses: { 200: json('SubscribeResponseB', 'Subscribed; subscribing again has no effect.'), ...errors('ErrorB', { ...AUTH, 403: 'no subscription permission', 404: 'no such topic', ...COMMON }) },
        }),
        delete: b('Unsubscribe (svc extension)', {
          operationId: 'unsubscribeB',
          parameters: [topicParam],
          responses: { 200: json('UnsubscribeResponseB', 'Unsubscribed, or there was nothing to unsubscribe from.'), ...errors('ErrorB', { ...AUTH, 404: 'not a topic name', ...COMMON }) },
        }),
      },
    },
  };
}
