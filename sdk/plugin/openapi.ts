import { z } from 'zod';
import type { OpenApiFragment } from './contract.ts';

/**
 * JSON Schema 2020-12 (the dialect of OpenAPI 3.1) of a zod schema, `.describe()` texts included:
 * of what a client sends (`input`, defaults optional) or receives (`output`).
 */
export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

/**
 * One OpenAPI 3.1 document from the parts plugins contribute (`contributes.openapi`): a disabled
 * plugin's routes are simply not in it. `info` and extra security schemes come from the caller.
 */
export function openApiDocument(info: { title: string; version: string; description?: string }, fragments: readonly OpenApiFragment[], securitySchemes: Record<string, unknown> = {}): Record<string, unknown> {
  const tags: Array<Record<string, unknown>> = [];
  const schemas: Record<string, unknown> = {};
  const schemes: Record<string, unknown> = { ...securitySchemes };
  const headers: Record<string, unknown> = {};
  const paths: Record<string, unknown> = {};
  for (const f of fragments) {
    tags.push(...(f.tags ?? []));
    Object.assign(schemas, f.schemas);
    Object.assign(schemes, f.securitySchemes);
    Object.assign(headers, f.headers);
    Object.assign(paths, f.paths);
  }
  const components: Record<string, unknown> = { schemas, securitySchemes: schemes };
  if (Object.keys(headers).length) components.headers = headers;
  return { openapi: '3.1.0', info, tags, components, paths };
}
