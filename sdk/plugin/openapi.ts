import type { OpenApiFragment } from './contract.ts';

/**
 * One OpenAPI 3.1 document from the parts plugins contribute (`contributes.openapi`): a disabled
 * plugin's routes are simply not in it. `info` and extra security schemes come from the caller.
 */
export function openApiDocument(info: { title: string; version: string; description?: string }, fragments: readonly OpenApiFragment[], securitySchemes: Record<string, unknown> = {}): Record<string, unknown> {
  const tags: Array<Record<string, unknown>> = [];
  const schemas: Record<string, unknown> = {};
  const schemes: Record<string, unknown> = { ...securitySchemes };
  const paths: Record<string, unknown> = {};
  for (const f of fragments) {
    tags.push(...(f.tags ?? []));
    Object.assign(schemas, f.schemas);
    Object.assign(schemes, f.securitySchemes);
    Object.assign(paths, f.paths);
  }
  return { openapi: '3.1.0', info, tags, components: { schemas, securitySchemes: schemes }, paths };
}
