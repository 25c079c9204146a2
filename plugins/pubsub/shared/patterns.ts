import { tenantOf } from '../../../sdk/plugin/index.ts';

/**
 * Topic-name patterns of endpoint permissions: `*` matches within one path segment,
 * `**` across segments. Exact names are looked up first (a Set), wildcards after.
 *
 * A platform topic starts with `/` (`/orders/new`). A tenant's topic is stored qualified, its
 * tenant in place of the leading slash (acme's `/orders/new` is `acme/orders/new`, the SDK's
 * `qualify`): no platform name can equal it, and a pattern, anchored at its first character,
 * matches either platform topics (it starts with `/`) or one tenant's (it starts with `acme/`).
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

/** The tenant whose topic (or pattern) this is, by its qualified form; undefined for the platform's (`/…`). */
export function topicTenant(topic: string): string | undefined {
  // The platform's topics are most of the traffic: one character tells them apart.
  return topic.charCodeAt(0) === 47 ? undefined : tenantOf(topic);
}

/** A topic name as the server stores it: the platform's (`/orders`) or a tenant's, qualified (`acme/orders`). */
export function isStoredTopicName(name: string): boolean {
  const tenant = topicTenant(name);
  return isTopicName(tenant === undefined ? name : name.slice(tenant.length));
}

/** A pattern as the server stores it: the platform's (`/orders/*`) or a tenant's, qualified (`acme/orders/*`). */
export function isStoredTopicPattern(pattern: string): boolean {
  const tenant = topicTenant(pattern);
  return isTopicPattern(tenant === undefined ? pattern : pattern.slice(tenant.length));
}

/** A topic as its tenant's clients and services name it: `acme/orders` → `/orders`; the platform's as it is. */
export function shortTopic(topic: string): string {
  const tenant = topicTenant(topic);
  return tenant === undefined ? topic : topic.slice(tenant.length);
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
