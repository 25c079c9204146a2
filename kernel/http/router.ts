import FindMyWay from 'find-my-way';
import type { ChannelRuntime } from './chain.ts';
import type { ConfigIssue } from '../plugin.ts';

/** Channels (and plugin routes) sharing one URL pattern, told apart by method. */
interface PathGroup {
  pattern: string;
  byMethod: Map<string, ChannelRuntime>;
  any: ChannelRuntime | undefined;
  allow: string;
}

export type Match =
  | { kind: 'channel'; runtime: ChannelRuntime; params: Record<string, string> }
  /** No entry for this method; `runtime` (one that serves the path) shapes the 405, as its API may have its own error body. */
  | { kind: 'method'; allow: string; runtime: ChannelRuntime; params: Record<string, string> }
  | undefined;

/** `/a/{x}/b` → `/a/:x/b` (find-my-way's syntax). */
export function toRoutePattern(urlPath: string): string {
  return urlPath.replace(/\{([^}]+)\}/g, ':$1');
}

export interface RouteEntry {
  runtime: ChannelRuntime;
  /** find-my-way pattern. */
  pattern: string;
  /** Undefined: any method. */
  methods: readonly string[] | undefined;
  /** For error messages: where this entry came from. */
  path: (string | number)[];
}

/**
 * The routing table of one config version. Built whole and swapped in at once, so a
 * request in flight keeps the table (and the chains) it started with.
 */
export class ChannelRouter {
  private readonly fmw = FindMyWay({ ignoreTrailingSlash: false, maxParamLength: 2048, caseSensitive: true });
  private readonly groups = new Map<string, PathGroup>();
  readonly issues: ConfigIssue[] = [];

  constructor(entries: readonly RouteEntry[]) {
    for (const entry of entries) this.add(entry);
  }

  private add(entry: RouteEntry): void {
    let group = this.groups.get(entry.pattern);
    if (!group) {
      group = { pattern: entry.pattern, byMethod: new Map(), any: undefined, allow: '' };
      try {
        // Methods are told apart here, not by find-my-way: a wrong method is 405, not 404.
        this.fmw.on('GET', entry.pattern, () => undefined, group);
      } catch (err) {
        this.issues.push({ path: entry.path, message: `URL path conflicts with another channel: ${(err as Error).message}` });
        return;
      }
      this.groups.set(entry.pattern, group);
    }
    if (!entry.methods) {
      if (group.any) this.issues.push({ path: entry.path, message: `another channel already serves ${entry.pattern} for any method` });
      else group.any = entry.runtime;
      return;
    }
    for (const method of entry.methods) {
      if (group.byMethod.has(method)) this.issues.push({ path: entry.path, message: `another channel already serves ${method} ${entry.pattern}` });
      else group.byMethod.set(method, entry.runtime);
    }
    group.allow = [...group.byMethod.keys()].join(', ');
  }

  match(method: string, path: string): Match {
    const found = this.fmw.find('GET', path);
    if (!found) return undefined;
    const group = found.store as PathGroup;
    const runtime = group.byMethod.get(method) ?? group.any;
    const params = found.params as Record<string, string>;
    if (!runtime) return { kind: 'method', allow: group.allow, runtime: group.byMethod.values().next().value!, params };
    return { kind: 'channel', runtime, params };
  }
}
