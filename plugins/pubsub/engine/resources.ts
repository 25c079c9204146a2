import type { PubSubEndpointView } from '../../capabilities.ts';
import { tenantOf } from '../../../sdk/plugin/index.ts';
import { compilePatterns } from '../shared/patterns.ts';
import type { EndpointDef, ResourceSet, TopicDef } from './model.ts';

export interface EndpointState extends PubSubEndpointView {
  security: string | undefined;
  services: ReadonlySet<string>;
}

const EMPTY: ResourceSet = { topics: [], endpoints: [], subscriptions: [] };

export function subId(endpoint: string, topic: string): string {
  return `${endpoint}\u0000${topic}`;
}

export function endpointState(def: EndpointDef): EndpointState {
  const pub = compilePatterns(def.pub);
  const sub = compilePatterns(def.sub);
  return {
    name: def.name,
    tenant: tenantOf(def.name),
    security: def.security,
    services: new Set(def.services ?? []),
    canPublish: (topic) => pub.matches(topic),
    canSubscribe: (topic) => sub.matches(topic),
  };
}

/**
 * The resources both strategies take from config: the configured set (config plus built-ins)
 * and those held by this node's memory only (`svc demo`), merged with config winning, and the
 * endpoints they define, by name and by security definition. Each strategy keeps its queues its
 * own way; what config says is read here once.
 */
export class ResourceBook {
  private configured: ResourceSet = EMPTY;
  private ephemeral: ResourceSet = EMPTY;
  private readonly endpoints = new Map<string, EndpointState>();
  private readonly endpointsBySecurity = new Map<string, EndpointState>();

  /** Replaces the configured set. */
  configure(resources: ResourceSet): void {
    this.configured = resources;
    this.indexEndpoints();
  }

  /** Adds to the memory-only set: a later definition of a name replaces an earlier one. */
  addEphemeral(resources: ResourceSet): void {
    const byName = <T extends { name: string }>(a: readonly T[], b: readonly T[]) => [...new Map([...a, ...b].map((x) => [x.name, x])).values()];
    this.ephemeral = {
      topics: byName(this.ephemeral.topics, resources.topics),
      endpoints: byName(this.ephemeral.endpoints, resources.endpoints),
      subscriptions: [...this.ephemeral.subscriptions, ...resources.subscriptions],
    };
    this.indexEndpoints();
  }

  /** Every topic by name; a configured one wins over a memory-only one of the same name. */
  topicDefs(): Map<string, { def: TopicDef; ephemeral: boolean }> {
    const defs = new Map<string, { def: TopicDef; ephemeral: boolean }>();
    for (const def of this.ephemeral.topics) defs.set(def.name, { def, ephemeral: true });
    for (const def of this.configured.topics) defs.set(def.name, { def, ephemeral: false });
    return defs;
  }

  /** The subscriptions config and `svc demo` ask for, one per endpoint and topic. */
  wantedSubscriptions(): Array<{ endpoint: string; topic: string }> {
    return [...this.configured.subscriptions, ...this.ephemeral.subscriptions].flatMap((s) => s.topics.map((topic) => ({ endpoint: s.endpoint, topic })));
  }

  endpoint(name: string): EndpointState | undefined {
    return this.endpoints.get(name);
  }

  endpointBySecurity(definition: string): EndpointState | undefined {
    return this.endpointsBySecurity.get(definition);
  }

  /** The endpoint through which config lets a service publish to a topic. */
  endpointForService(service: string, topic: string): EndpointState | undefined {
    for (const ep of this.endpoints.values()) if (ep.services.has(service) && ep.canPublish(topic)) return ep;
    return undefined;
  }

  private indexEndpoints(): void {
    this.endpoints.clear();
    this.endpointsBySecurity.clear();
    for (const def of [...this.ephemeral.endpoints, ...this.configured.endpoints]) {
      const ep = endpointState(def);
      this.endpoints.set(ep.name, ep);
      if (ep.security) this.endpointsBySecurity.set(ep.security, ep);
    }
  }
}
