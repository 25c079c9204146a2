import type { z } from 'zod';
import { jsonSchemaOf, openApiDocument, type OpenApiFragment } from '../../../sdk/plugin/index.ts';
import { statusLine } from './http.ts';

/** Where the running server serves the document (no credentials needed: it holds no secrets). */
export const OPENAPI_PATH = '/svc/pubsub/openapi.json';

export type Json = Record<string, unknown>;

/** JSON Schema 2020-12 of a request (input) or response (output) schema (the SDK's jsonSchemaOf). */
export const jsonSchema = (schema: z.ZodType, io: 'input' | 'output'): Json => jsonSchemaOf(schema, io);

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const json = (schemaName: string, description: string) => ({ description, content: { 'application/json': { schema: ref(schemaName) } } });

export const topicParam = {
  name: 'topic_name',
  in: 'path',
  required: true,
  description:
    "Topic name. Names may contain slashes and appear as the last path part: the topic's leading slash is the path separator " +
    '(topic `/svc/test/sample` is `.../topic/svc/test/sample`); a percent-encoded name (`%2Fsvc%2Ftest%2Fsample`) addresses the same topic.',
  schema: { type: 'string' },
};

export function errors(schemaName: string, statuses: Record<number, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [status, why] of Object.entries(statuses)) out[status] = json(schemaName, `${statusLine(Number(status))}: ${why}`);
  return out;
}

export const AUTH = { 401: 'missing or wrong credentials, or credentials of no pub/sub endpoint' };
export const COMMON = { 500: 'unexpected failure (details in the server log)', 503: 'pub/sub unavailable' };

/**
 * The pub/sub document from the parts the enabled REST variants contribute (their plugins'
 * `contributes.openapi`): a variant that is switched off is not in it.
 */
export function assembleOpenApi(version: string, fragments: readonly OpenApiFragment[]): Json {
  return openApiDocument(
    {
      title: 'svc publish/subscribe REST API',
      version,
      description:
        'One pub/sub engine behind the REST variants enabled on this server. Variant A: four operations under /svc/pubsub, errors `{result, cid, details}`. ' +
        'Variant B: publish and get under /pubsub (plus subscribe/unsubscribe, an svc extension), errors `{is_ok: false, cid, details, status}`. ' +
        'Every response carries the correlation ID in the X-Svc-CID header.',
    },
    fragments,
    { basicAuth: { type: 'http', scheme: 'basic' } },
  );
}
