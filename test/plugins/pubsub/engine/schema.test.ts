import { describe, expect, it } from 'vitest';
import { pubsubSections, validatePubsub } from '../../../../plugins/pubsub/engine/schema.ts';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';

function config(parts: { security?: unknown[]; topics?: unknown[]; endpoints?: unknown[]; subscriptions?: unknown[]; tenants?: string[] }): SvcConfig {
  return {
    tenants: (parts.tenants ?? []).map((name) => ({ name, processes: 0, weight: 1, quotas: {} })),
    security: (parts.security ?? [{ name: 'sec.a', type: 'basic_auth', username: 'a' }]) as SvcConfig['security'],
    pubsub_topic: pubsubSections.pubsub_topic.parse(parts.topics ?? []),
    pubsub_endpoint: pubsubSections.pubsub_endpoint.parse(parts.endpoints ?? []),
    pubsub_subscription: pubsubSections.pubsub_subscription.parse(parts.subscriptions ?? []),
  } as unknown as SvcConfig;
}

const messages = (c: SvcConfig) => validatePubsub(c).map((i) => `${i.path.join('.')}: ${i.message}`);

describe('pubsub config sections', () => {
  it('parse with defaults', () => {
    expect(pubsubSections.pubsub_endpoint.parse([{ name: 'e', security: 's' }])).toEqual([{ name: 'e', security: 's', pub: [], sub: [] }]);
    expect(pubsubSections.pubsub_topic.parse(undefined)).toEqual([]);
  });

  it('refuse bad topic names, patterns, depths and unknown keys', () => {
    for (const bad of [[{ name: 'orders' }], [{ name: '/a/*' }], [{ name: '/a', max_depth: 0 }], [{ name: '/a', retention: 1 }]]) {
      expect(pubsubSections.pubsub_topic.safeParse(bad).success).toBe(false);
    }
    expect(pubsubSections.pubsub_endpoint.safeParse([{ name: 'e', security: 's', pub: ['orders'] }]).success).toBe(false);
    expect(pubsubSections.pubsub_subscription.safeParse([{ endpoint: 'e', topics: [] }]).success).toBe(false);
  });

  it('a valid config has no issues; the built-in definition may back endpoints', () => {
    const c = config({
      topics: [{ name: '/orders/new' }],
      endpoints: [{ name: 'e', security: 'sec.a', pub: ['/orders/*'], sub: ['/orders/**'] }],
      subscriptions: [{ endpoint: 'e', topics: ['/orders/new', '/svc/test/sample'] }],
    });
    expect(messages(c)).toEqual(['pubsub_subscription.0.topics.1: endpoint \'e\' has no subscription permission for \'/svc/test/sample\'']);
    expect(messages(config({ topics: [{ name: '/orders/new' }], endpoints: [{ name: 'e', security: 'sec.a', sub: ['/orders/*'] }], subscriptions: [{ endpoint: 'e', topics: ['/orders/new'] }] }))).toEqual([]);
  });

  it('finds duplicates, unknown references and reserved names', () => {
    const c = config({
      security: [
        { name: 'sec.a', type: 'basic_auth', username: 'a' },
        { name: 'key.b', type: 'apikey' },
      ],
      topics: [{ name: '/t' }, { name: '/t' }, { name: '/svc/test/sample' }],
      endpoints: [
        { name: 'e1', security: 'sec.a' },
        { name: 'e2', security: 'sec.a' },
        { name: 'e3', security: 'key.b' },
        { name: 'e4' },
        { name: 'svc.pubsub.test.endpoint', security: 'nope' },
      ],
      subscriptions: [{ endpoint: 'ghost', topics: ['/t'] }, { endpoint: 'e1', topics: ['/missing'] }],
    });
    expect(messages(c)).toEqual([
      "pubsub_topic.1.name: duplicate topic '/t'",
      "pubsub_topic.2.name: duplicate topic '/svc/test/sample' (a built-in test topic)",
      "pubsub_endpoint.1.security: definition 'sec.a' already identifies endpoint 'e1'",
      "pubsub_endpoint.2.security: no basic_auth definition named 'key.b' (pub/sub endpoints use HTTP Basic Auth only)",
      'pubsub_endpoint.3.security: required unless `services` names the services publishing as this endpoint',
      "pubsub_endpoint.4.name: duplicate endpoint 'svc.pubsub.test.endpoint' (the built-in test endpoint)",
      "pubsub_endpoint.4.security: no basic_auth definition named 'nope' (pub/sub endpoints use HTTP Basic Auth only)",
      "pubsub_subscription.0.endpoint: no pub/sub endpoint named 'ghost'",
      "pubsub_subscription.1.topics.0: no topic named '/missing'",
    ]);
  });

  it('an endpoint for services needs no security definition', () => {
    expect(messages(config({ topics: [{ name: '/t' }], endpoints: [{ name: 'svc', services: ['billing'], pub: ['/t'] }] }))).toEqual([]);
  });

  it("take a tenant's qualified names (its `/orders` is `acme/orders`), and refuse them as the platform's", () => {
    expect(pubsubSections.pubsub_topic.safeParse([{ name: 'acme/orders/new' }]).success).toBe(true);
    expect(pubsubSections.pubsub_endpoint.safeParse([{ name: 'acme/e', security: 'acme/s', pub: ['acme/orders/*'], sub: ['acme/**'] }]).success).toBe(true);
    for (const bad of ['acme', 'acme//x', 'Acme/x', 'acme/x/*', '/acme/x y']) expect(pubsubSections.pubsub_topic.safeParse([{ name: bad }]).success, bad).toBe(false);
    expect(pubsubSections.pubsub_endpoint.safeParse([{ name: 'e', security: 's', pub: ['*/orders'] }]).success).toBe(false);
  });

  it('hold pub/sub to its owner: declared tenants only; platform endpoints reach platform topics and grant platform services', () => {
    const c = config({
      tenants: ['acme'],
      security: [{ name: 'acme/s', type: 'basic_auth', username: 'a' }],
      topics: [{ name: 'acme/orders' }, { name: 'ghost/orders' }, { name: '/orders' }],
      endpoints: [
        { name: 'acme/e', security: 'acme/s', pub: ['acme/**'], sub: ['acme/orders'] },
        { name: 'ghost/e', services: ['ghost/svc'], pub: ['ghost/**'] },
        { name: 'plat', services: ['billing', 'acme/billing'], pub: ['/orders', 'acme/orders'], sub: ['acme/**'] },
      ],
      subscriptions: [{ endpoint: 'acme/e', topics: ['acme/orders', '/orders'] }],
    });
    expect(messages(c)).toEqual([
      "pubsub_subscription.0.topics.1: endpoint 'acme/e' has no subscription permission for '/orders'",
      "pubsub_topic.1.name: 'ghost/orders' is a topic of tenant 'ghost', which is not declared (a platform topic starts with '/')",
      "pubsub_endpoint.1.name: 'ghost/e' is an endpoint of tenant 'ghost', which is not declared (a platform endpoint's name has no 'ghost/' prefix)",
      "pubsub_endpoint.2.pub.1: 'acme/orders' names tenant 'acme''s topics: a platform endpoint reaches platform topics only (starting with '/')",
      "pubsub_endpoint.2.sub.0: 'acme/**' names tenant 'acme''s topics: a platform endpoint reaches platform topics only (starting with '/')",
      "pubsub_endpoint.2.services.1: 'acme/billing' is a service of tenant 'acme': it publishes to its tenant's topics, through an endpoint in its tenant's config",
    ]);
  });
});
