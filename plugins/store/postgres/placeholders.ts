/**
 * `?` placeholders → PostgreSQL's `$1, $2, …`, skipping what is not SQL code: '…' literals
 * (with '' inside), "…" identifiers, $tag$…$tag$ bodies, -- and /* *\/ comments. A `?` in those
 * stays as it is. (PostgreSQL operators spelt with `?`, jsonb's, cannot be used through the store.)
 */
export function toPositional(sql: string): string {
  let out = '';
  let n = 0;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    const end = skipEnd(sql, i, c);
    if (end > i) {
      out += sql.slice(i, end);
      i = end;
    } else if (c === '?') {
      out += `$${++n}`;
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Where the literal, identifier or comment starting at i ends; i when none starts there. */
function skipEnd(sql: string, i: number, c: string): number {
  if (c === "'" || c === '"') {
    let j = i + 1;
    while (j < sql.length) {
      if (sql[j] === c) {
        if (sql[j + 1] === c) j += 2;
        else return j + 1;
      } else j++;
    }
    return sql.length;
  }
  if (c === '-' && sql[i + 1] === '-') {
    const nl = sql.indexOf('\n', i);
    return nl < 0 ? sql.length : nl;
  }
  if (c === '/' && sql[i + 1] === '*') {
    const close = sql.indexOf('*/', i + 2);
    return close < 0 ? sql.length : close + 2;
  }
  if (c === '$') {
    const tag = /^\$[A-Za-z_][A-Za-z0-9_]*\$|^\$\$/.exec(sql.slice(i, i + 64))?.[0];
    if (tag === undefined) return i;
    const close = sql.indexOf(tag, i + tag.length);
    return close < 0 ? sql.length : close + tag.length;
  }
  return i;
}

const cache = new Map<string, string>();
const CACHE_LIMIT = 2_000;

/** toPositional, remembered: statement texts are few and hot. */
export function positional(sql: string): string {
  let text = cache.get(sql);
  if (text === undefined) {
    text = toPositional(sql);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(sql, text);
  }
  return text;
}
