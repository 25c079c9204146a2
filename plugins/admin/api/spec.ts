import type { Json } from './catalogue.ts';

/**
 * An OpenAPI document cut to a tenant's part: the paths under its URL prefix, and only the
 * components those paths use (schemas by `$ref`, security schemes by name), so nothing of
 * another tenant's channels (their paths, models or security definitions) is left in it.
 */
export function specUnder(doc: Json, prefix: string): Json {
  const paths = Object.fromEntries(Object.entries((doc.paths ?? {}) as Json).filter(([path]) => path === prefix || path.startsWith(`${prefix}/`)));
  const components = (doc.components ?? {}) as Record<string, Json>;
  const kept: Record<string, Json> = {};
  const keep = (kind: string, name: string): void => {
    const value = components[kind]?.[name];
    if (value === undefined || kept[kind]?.[name] !== undefined) return;
    (kept[kind] ??= {})[name] = value;
    visit(value);
  };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') {
        const m = /^#\/components\/([^/]+)\/(.+)$/.exec(value);
        if (m) keep(m[1]!, decodeURIComponent(m[2]!.replace(/~1/g, '/').replace(/~0/g, '~')));
      } else if (key === 'security' && Array.isArray(value)) {
        for (const requirement of value) for (const scheme of Object.keys((requirement ?? {}) as Json)) keep('securitySchemes', scheme);
      } else visit(value);
    }
  };
  visit(paths);
  visit({ security: doc.security });
  const used = new Set<string>();
  for (const item of Object.values(paths) as Json[]) for (const op of Object.values(item)) for (const tag of ((op as Json)?.tags as string[] | undefined) ?? []) used.add(tag);
  const out: Json = { ...doc, paths, components: kept };
  if (Array.isArray(doc.tags)) out.tags = (doc.tags as Json[]).filter((t) => used.has(String(t.name)));
  return out;
}
