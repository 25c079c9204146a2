/**
 * Topic-name patterns of endpoint permissions: `*` matches within one path segment,
 * `**` across segments. Exact names are looked up first (a Set), wildcards after.
 */
export interface TopicMatcher {
  matches(topic: string): boolean;
  /** The patterns as configured, for logs and docs. */
  readonly patterns: readonly string[];
}

/** A topic name: `/` followed by non-empty segments; no wildcard, `%`, `?`, `#` or whitespace. */
export const TOPIC_NAME_RE = /^(\/[^/\s?#%*]+)+$/;
/** A pattern: like a topic name, where segments may hold `*` and `**`. */
export const TOPIC_PATTERN_RE = /^(\/[^/\s?#%]+)+$/;

export function isTopicName(name: string): boolean {
  return name.length <= 200 && TOPIC_NAME_RE.test(name);
}

export function isTopicPattern(pattern: string): boolean {
  return pattern.length <= 200 && TOPIC_PATTERN_RE.test(pattern) && !/\*{3,}/.test(pattern);
}

export function compilePatterns(patterns: readonly string[]): TopicMatcher {
  const exact = new Set<string>();
  const wildcards: RegExp[] = [];
  for (const pattern of patterns) {
    if (pattern.includes('*')) wildcards.push(patternToRegExp(pattern));
    else exact.add(pattern);
  }
  return {
    patterns: [...patterns],
    matches(topic: string): boolean {
      if (exact.has(topic)) return true;
      for (const re of wildcards) if (re.test(topic)) return true;
      return false;
    },
  };
}

function patternToRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '*') {
      if (pattern[i + 1] === '*') {
        source += '.*';
        i++;
      } else {
        source += '[^/]*';
      }
    } else {
      source += ch.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`);
}
