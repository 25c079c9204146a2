import { z } from 'zod';
import { listColumn, scopedRef } from '../../../sdk/plugin/index.ts';
import { tenantOf, type ConfigIssue } from '../../../sdk/plugin/index.ts';
import type { SvcConfig } from '../../../sdk/plugin/index.ts';
import { compilePatterns, isStoredTopicName, isStoredTopicPattern, topicTenant } from '../shared/patterns.ts';
import { BUILTIN, BUILTIN_RESOURCES } from './builtin.ts';
import type { ResourceSet } from './engine.ts';

export const DEFAULT_MAX_DEPTH = 10_000;

// A tenant's names reach here qualified (its `/orders` is `acme/orders`, patterns.ts): both forms pass.
const topicName = z.string().refine(isStoredTopicName, "must start with '/' and hold non-empty segments without '*', '%', '?', '#' or spaces (at most 200 characters)");
const topicPattern = z.string().refine(isStoredTopicPattern, "must start with '/'; '*' matches within one segment, '**' across segments");

export const topicEntrySchema = z
  .object({
    name: topicName.describe('Topic name; may contain slashes (`/orders/new`). In URLs its leading slash is the path separator.'),
    max_depth: z
      .number()
      .int()
      .min(1)
      .max(10_000_000)
      .optional()
      .describe(`Most messages one subscriber queue (or the topic's retained set) may hold; a publish beyond it is refused with 503. Default ${DEFAULT_MAX_DEPTH}.`),
  })
  .strict();

export const endpointEntrySchema = z
  .object({
    name: z.string().min(1).describe('Name of the pub/sub endpoint (client identity); unique.'),
    security: listColumn(scopedRef(z.string().min(1), { to: ['security'] }), 1, 'Security')
      .optional()
      .describe('Name of the basic_auth definition whose credentials identify this endpoint on the REST APIs. Required unless `services` is given.'),
    pub: listColumn(z.array(scopedRef(topicPattern)), 2, 'Publishes to').default([]).describe('Topic patterns this endpoint may publish to (`*` within a segment, `**` across segments).'),
    sub: listColumn(z.array(scopedRef(topicPattern)), 3, 'Subscribes to').default([]).describe('Topic patterns this endpoint may subscribe to.'),
    services: z
      .array(scopedRef(z.string().min(1)))
      .optional()
      .describe('Services that may publish through the SDK as this endpoint, to the topics its `pub` patterns allow.'),
  })
  .strict();

export const subscriptionEntrySchema = z
  .object({
    endpoint: scopedRef(z.string().min(1), { to: ['pubsub_endpoint'] }).describe('Name of the subscribing pub/sub endpoint.'),
    topics: z.array(scopedRef(topicName)).min(1).describe('Topics the endpoint is subscribed to (it needs subscription permission for each).'),
  })
  .strict();

export const pubsubSections = {
  pubsub_topic: z.array(topicEntrySchema).default([]).describe('Pub/sub topics.').meta({ title: 'Pub/sub topics' }),
  pubsub_endpoint: z.array(endpointEntrySchema).default([]).describe('Pub/sub endpoints: client identities and their permissions.').meta({ title: 'Pub/sub endpoints' }),
  pubsub_subscription: z.array(subscriptionEntrySchema).default([]).describe('Subscriptions made by config (variant B, or pre-created for variant A).').meta({ title: 'Pub/sub subscriptions' }),
};

export type TopicEntry = z.infer<typeof topicEntrySchema>;
export type EndpointEntry = z.infer<typeof endpointEntrySchema>;
export type SubscriptionEntry = z.infer<typeof subscriptionEntrySchema>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    pubsub_topic: TopicEntry[];
    pubsub_endpoint: EndpointEntry[];
    pubsub_subscription: SubscriptionEntry[];
  }
}

function sections(config: SvcConfig) {
  return { topics: config.pubsub_topic, endpoints: config.pubsub_endpoint, subscriptions: config.pubsub_subscription };
}

/** The engine's resources: the config's plus the built-in test resources. */
export function resourcesOf(config: SvcConfig): ResourceSet {
  const { topics, endpoints, subscriptions } = sections(config);
  return {
    topics: [...BUILTIN_RESOURCES.topics, ...topics],
    endpoints: [...BUILTIN_RESOURCES.endpoints, ...endpoints],
    subscriptions,
  };
}

/** Cross-references: unique names, known definitions, endpoints and topics, permissions. */
export function validatePubsub(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const { topics, endpoints, subscriptions } = sections(config);
  const basicAuth = new Set(config.security.filter((s) => s.type === 'basic_auth').map((s) => s.name));
  basicAuth.add(BUILTIN.secdef);

  const topicNames = new Set<string>(BUILTIN_RESOURCES.topics.map((t) => t.name));
  topics.forEach((t, i) => {
    if (topicNames.has(t.name)) issues.push({ path: ['pubsub_topic', i, 'name'], message: `duplicate topic '${t.name}'${t.name === BUILTIN.topic ? ' (a built-in test topic)' : ''}` });
    topicNames.add(t.name);
  });

  const byName = new Map<string, { sub: readonly string[] }>(BUILTIN_RESOURCES.endpoints.map((e) => [e.name, e]));
  const bySecurity = new Map<string, string>([[BUILTIN.secdef, BUILTIN.endpoint]]);
  endpoints.forEach((e, i) => {
    if (byName.has(e.name)) issues.push({ path: ['pubsub_endpoint', i, 'name'], message: `duplicate endpoint '${e.name}'${e.name === BUILTIN.endpoint ? ' (the built-in test endpoint)' : ''}` });
    byName.set(e.name, e);
    if (e.security === undefined) {
      if (!e.services?.length) issues.push({ path: ['pubsub_endpoint', i, 'security'], message: 'required unless `services` names the services publishing as this endpoint' });
      return;
    }
    if (!basicAuth.has(e.security)) {
      issues.push({ path: ['pubsub_endpoint', i, 'security'], message: `no basic_auth definition named '${e.security}' (pub/sub endpoints use HTTP Basic Auth only)` });
    }
    const other = bySecurity.get(e.security);
    if (other !== undefined) issues.push({ path: ['pubsub_endpoint', i, 'security'], message: `definition '${e.security}' already identifies endpoint '${other}'` });
    else bySecurity.set(e.security, e.name);
  });

  subscriptions.forEach((s, i) => {
    const endpoint = byName.get(s.endpoint);
    if (!endpoint) {
      issues.push({ path: ['pubsub_subscription', i, 'endpoint'], message: `no pub/sub endpoint named '${s.endpoint}'` });
      return;
    }
    const allowed = compilePatterns(endpoint.sub);
    s.topics.forEach((topic, j) => {
      if (!topicNames.has(topic)) issues.push({ path: ['pubsub_subscription', i, 'topics', j], message: `no topic named '${topic}'` });
      else if (!allowed.matches(topic)) issues.push({ path: ['pubsub_subscription', i, 'topics', j], message: `endpoint '${s.endpoint}' has no subscription permission for '${topic}'` });
    });
  });
  return [...issues, ...ownershipIssues(config)];
}

/**
 * Who owns what, where the kernel's check of tenants' references (kernel/config/tenants.ts)
 * does not look: it holds a declared tenant's entries to their tenant, and lets the platform's
 * name anything. Here a tenant-qualified topic or endpoint must be a declared tenant's (its
 * clients' topics are qualified by that name), and a platform endpoint reaches platform topics
 * only, and grants them to platform services only: a tenant's service publishes to its tenant's
 * topics, through its tenant's endpoints (docs/decisions/tenants.md).
 */
function ownershipIssues(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const declared = new Set(config.tenants.map((t) => t.name));
  const undeclared = (tenant: string | undefined): tenant is string => tenant !== undefined && !declared.has(tenant);
  config.pubsub_topic.forEach((t, i) => {
    const tenant = topicTenant(t.name);
    if (undeclared(tenant)) issues.push({ path: ['pubsub_topic', i, 'name'], message: `'${t.name}' is a topic of tenant '${tenant}', which is not declared (a platform topic starts with '/')` });
  });
  config.pubsub_endpoint.forEach((e, i) => {
    const tenant = tenantOf(e.name);
    if (undeclared(tenant)) {
      issues.push({ path: ['pubsub_endpoint', i, 'name'], message: `'${e.name}' is an endpoint of tenant '${tenant}', which is not declared (a platform endpoint's name has no '${tenant}/' prefix)` });
      return;
    }
    if (tenant !== undefined) return;
    for (const field of ['pub', 'sub'] as const) {
      e[field].forEach((pattern, j) => {
        const owner = topicTenant(pattern);
        if (owner !== undefined) issues.push({ path: ['pubsub_endpoint', i, field, j], message: `'${pattern}' names tenant '${owner}''s topics: a platform endpoint reaches platform topics only (starting with '/')` });
      });
    }
    e.services?.forEach((service, j) => {
      const owner = tenantOf(service);
      if (owner !== undefined) {
        issues.push({ path: ['pubsub_endpoint', i, 'services', j], message: `'${service}' is a service of tenant '${owner}': it publishes to its tenant's topics, through an endpoint in its tenant's config` });
      }
    });
  });
  return issues;
}
