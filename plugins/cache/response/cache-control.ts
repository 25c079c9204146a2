/** The Cache-Control directives the response cache acts on (RFC 9111), from a request or a response. */
export interface CacheControl {
  noStore: boolean;
  noCache: boolean;
  private: boolean;
  /** Seconds; undefined when absent or not a number. */
  maxAge: number | undefined;
  sMaxAge: number | undefined;
}

const NONE: CacheControl = Object.freeze({ noStore: false, noCache: false, private: false, maxAge: undefined, sMaxAge: undefined });

function seconds(value: string | undefined): number | undefined {
  const text = value?.replace(/^"(.*)"$/, '$1');
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}

/** Directives of a header's value (or values); names in any case, unknown ones ignored. */
export function parseCacheControl(header: string | readonly string[] | undefined): CacheControl {
  if (header === undefined || header.length === 0) return NONE;
  const cc: CacheControl = { ...NONE };
  for (const part of (typeof header === 'string' ? header : header.join(',')).split(',')) {
    const eq = part.indexOf('=');
    const name = (eq === -1 ? part : part.slice(0, eq)).trim().toLowerCase();
    const value = eq === -1 ? undefined : part.slice(eq + 1).trim();
    if (name === 'no-store') cc.noStore = true;
    else if (name === 'no-cache') cc.noCache = true;
    else if (name === 'private') cc.private = true;
    else if (name === 'max-age') cc.maxAge = seconds(value);
    else if (name === 's-maxage') cc.sMaxAge = seconds(value);
  }
  return cc;
}
