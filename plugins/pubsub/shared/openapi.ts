import { z } from 'zod';
import * as A from '../variant-a/schemas.ts';
import * as B from '../variant-b/schemas.ts';
import { statusLine } from './http.ts';

/** Where the running server serves the document (no credentials needed: it holds no secrets). */
export const OPENAPI_PATH = '/svc/pubsub/openapi.json';

type Json = Record<string, unknown>;

/** JSON Schema 2020-12 (the dialect of OpenAPI 3.1) of a request (input) or response (output) schema. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  delete out.$schema;
  return out;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schemaName: string, description: string) => ({ description, content: { 'application/json': { schema: ref(schemaName) } } });

const topicParam = {
  name: 'topic_name',
  in: 'path',
  required: true,
  description:
    "Topic name. Names may contain slashes and appear as the last path part: the topic's leading slash is the path separator " +
    '(topic `/svc/test/sample` is `.../topic/svc/test/sample`); a percent-encoded name (`%2Fsvc%2Ftest%2Fsample`) addresses the same topic.',
  schema: { type: 'string' },
};

function errors(schemaName: string, statuses: Record<number, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [status, why] of Object.entries(statuses)) out[status] = json(schemaName, `${statusLine(Number(status))}: ${why}`);
  return out;
}

const AUTH = { 401: 'missing or wrong credentials, or credentials of no pub/sub endpoint' };
const COMMON = { 500: 'unexpected failure (details in the server log)', 503: 'pub/sub unavailable' };

export function buildOpenApi(version = '1.0.0'): Json {
  const schemas: Record<string, Json> = {
    PublishRequestA: jsonSchema(A.publishRequestA, 'input'),
    PublishResponseA: jsonSchema(A.publishResponseA, 'output'),
    MessageA: jsonSchema(A.messageA, 'output'),
    GetResponseA: { type: 'array', items: ref('MessageA'), description: A.getResponseA.description },
    SubscribeResponseA: jsonSchema(A.subscribeResponseA, 'output'),
    UnsubscribeResponseA: jsonSchema(A.unsubscribeResponseA, 'output'),
    ErrorA: jsonSchema(A.errorA, 'output'),
    PublishRequestB: jsonSchema(B.publishRequestB, 'input'),
    PublishResponseB: jsonSchema(B.publishResponseB, 'output'),
    GetRequestB: jsonSchema(B.getRequestB, 'input'),
    GetResponseB: jsonSchema(B.getResponseB, 'output'),
    SubscribeResponseB: jsonSchema(B.subscribeResponseB, 'output'),
    UnsubscribeResponseB: jsonSchema(B.unsubscribeResponseB, 'output'),
    ErrorB: jsonSchema(B.errorB, 'output'),
  };
  const a = (summary: string, extra: Json) => ({ tags: ['Variant A'], summary, parameters: [topicParam], security: [{ basicAuth: [] }], ...extra });
  const b = (summary: string, extra: Json) => ({ tags: ['Variant B'], summary, security: [{ basicAuth: [] }], ...extra });

  return {
    openapi: '3.1.0',
    info: {
      title: 'svc publish/subscribe REST API',
      version,
      description:
        'Two variants of one pub/sub engine. Variant A: four operations under /svc/pubsub, errors `{result, cid, details}`. ' +
        'Variant B: publish and get under /pubsub (plus subscribe/unsubscribe, an svc extension), errors `{is_ok: false, cid, details, status}`. ' +
        'Every response carries the correlation ID in the X-Svc-CID header.',
    },
    tags: [{ name: 'Variant A' }, { name: 'Variant B' }],
    components: { schemas, securitySchemes: { basicAuth: { type: 'http', scheme: 'basic' } } },
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
