import { describe, expect, it } from 'vitest';
import { pubsubSections, validatePubsub } from '../../../../plugins/pubsub/engine/schema.ts';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';

function config(parts: { security?: unknown[]; topics?: unknown[]; endpoints?: unknown[]; subscriptions?: unknown[] }): SvcConfig {
  return {
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
    expect(pubsubSections.pubsub_endpoint.safeParse([{ name: 'e', security: 's', pub: ['orders/*'] }]).success).toBe(false);
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
});
