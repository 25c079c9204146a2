import { SvcError } from '../../../sdk/plugin/index.ts';

export type ParamValue = string | number | boolean;
export type Params = Record<string, ParamValue | ParamValue[]>;

/**
 * The request path of a connection: its address's path prefix, then url_path with {placeholders}
 * filled from the call's params (URL-encoded), then the remaining params as the query string
 * (spec D, Params). Compiled once per connection; the per-call function only concatenates.
 */
export function pathBuilder(address: string, urlPath: string): (params: Params | undefined) => string {
  const prefix = new URL(address).pathname.replace(/\/+$/, '');
  const parts = urlPath.split(/\{([^}]*)\}/);
  const names = new Set(parts.filter((_, i) => i % 2 === 1));
  return function buildPath(params) {
    let path = prefix;
    for (let i = 0; i < parts.length; i++) {
      if (i % 2 === 0) {
        path += parts[i];
        continue;
      }
      const value = params?.[parts[i]!];
      if (value === undefined || Array.isArray(value)) throw new SvcError('INTERNAL', `params must give '${parts[i]}' (a placeholder of the connection's url_path) one value`);
      path += encodeURIComponent(String(value));
    }
    let query = '';
    if (params) {
      const search = new URLSearchParams();
      for (const [key, value] of Object.entries(params)) {
        if (names.has(key)) continue;
        for (const v of Array.isArray(value) ? value : [value]) search.append(key, String(v));
      }
      query = search.toString();
    }
    return query ? `${path}?${query}` : path;
  };
}
