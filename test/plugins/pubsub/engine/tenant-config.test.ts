import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPlugins } from '../../../../kernel/plugin-loader.ts';
import type { Plugin } from '../../../../kernel/plugin.ts';
import { configIssues, validConfig } from '../../../helpers/config.ts';

/**
 * Tenants' pub/sub config through the whole config path (tenants' sections qualified, the
 * kernel's reference checks, the plugin's): a tenant writes short names, the server stores them
 * qualified, and nothing a tenant or the main file writes makes one tenant's pub/sub reach
 * another's or the platform's. Config only: this runs on every Node line.
 */

let plugins: Plugin[];
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-tenant-pubsub-config-'));
  plugins = (await loadPlugins({}, dir)).map((l) => l.plugin);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const load = (yaml: string) => validConfig(yaml, plugins, dir);
const issues = (yaml: string) => configIssues(yaml, plugins, dir);

/** A tenant's pub/sub as it writes it: short names, topics with their leading slash; `indent` spaces deep, `subscriptions` added. */
function tenantPubsub(user: string, indent = 6, subscriptions: string[] = []): string {
  const lines = [
    `security: [{ name: erp, type: basic_auth, username: ${user}, password: "pw-123456" }]`,
    'pubsub_topic: [{ name: /orders/new }, { name: /orders/paid, max_depth: 5 }]',
    'pubsub_endpoint:',
    "  - { name: erp, security: erp, pub: ['/orders/*'], sub: ['/**'] }",
    '  - { name: shop, services: [shop], pub: [/orders/new] }',
    'pubsub_subscription:',
    '  - { endpoint: erp, topics: [/orders/new] }',
    ...subscriptions.map((s) => `  - ${s}`),
  ];
  return lines.map((l) => `\n${' '.repeat(indent)}${l}`).join('');
}

describe("a tenant's pub/sub config", () => {
  it('is stored qualified: topics `acme/…`, endpoints, their definitions, patterns and services, subscriptions', () => {
    const config = load(`
tenants:
  - name: acme
    config:${tenantPubsub('acme-erp')}
pubsub_topic: [{ name: /orders/new }]
`);
    expect(config.pubsub_topic.map((t) => t.name)).toEqual(['/orders/new', 'acme/orders/new', 'acme/orders/paid']);
    expect(config.pubsub_endpoint).toEqual([
      { name: 'acme/erp', security: 'acme/erp', pub: ['acme/orders/*'], sub: ['acme/**'] },
      { name: 'acme/shop', services: ['acme/shop'], pub: ['acme/orders/new'], sub: [] },
    ]);
    expect(config.pubsub_subscription).toEqual([{ endpoint: 'acme/erp', topics: ['acme/orders/new'] }]);
  });

  it('two tenants and the platform may each have the same topics and endpoint names, side by side', () => {
    writeFileSync(join(dir, 'globex.yaml'), tenantPubsub('globex-erp', 0));
    const config = load(`
tenants:
  - name: acme
    config:${tenantPubsub('acme-erp')}
  - { name: globex, config_file: globex.yaml }
security: [{ name: erp, type: basic_auth, username: platform-erp, password: "pw-123456" }]
pubsub_topic: [{ name: /orders/new }]
pubsub_endpoint: [{ name: erp, security: erp, pub: ['/orders/*'] }]
`);
    expect(config.pubsub_topic.map((t) => t.name)).toEqual(['/orders/new', 'acme/orders/new', 'acme/orders/paid', 'globex/orders/new', 'globex/orders/paid']);
    expect(config.pubsub_endpoint.map((e) => e.name)).toEqual(['erp', 'acme/erp', 'acme/shop', 'globex/erp', 'globex/shop']);
  });

  it("names its mistakes where the tenant wrote them; another tenant's name is a name in its own namespace", () => {
    expect(
      issues(`
tenants:
  - name: acme
    config:${tenantPubsub('acme-erp', 6, ['{ endpoint: erp, topics: [/globex/orders/new, globex/orders/new] }', '{ endpoint: shop, topics: [/orders/paid] }'])}
  - name: globex
    config:${tenantPubsub('globex-erp')}
`),
    ).toEqual([
      "tenants[acme].config.pubsub_subscription[1].topics[0]: no topic named 'acme/globex/orders/new'",
      "tenants[acme].config.pubsub_subscription[1].topics[1]: no topic named 'acme/globex/orders/new'",
      "tenants[acme].config.pubsub_subscription[2].topics[0]: endpoint 'acme/shop' has no subscription permission for 'acme/orders/paid'",
    ]);
  });
});

describe('pub/sub entries in the main file that name tenants', () => {
  it("refuses an entry of one tenant naming another's or the platform's topics, endpoints or services", () => {
    expect(
      issues(`
tenants: [{ name: acme }, { name: globex }]
security: [{ name: acme/erp, type: basic_auth, username: acme-erp, password: "pw-123456" }]
pubsub_topic: [{ name: acme/orders }, { name: globex/orders }, { name: /orders }]
pubsub_endpoint:
  - { name: acme/erp, security: acme/erp, pub: [globex/orders], sub: [acme/orders, /orders] }
  - { name: acme/shop, services: [globex/shop], pub: [acme/orders] }
pubsub_subscription:
  - { endpoint: acme/erp, topics: [acme/orders, globex/orders] }
  - { endpoint: erp.platform, topics: [acme/orders] }
`),
    ).toEqual([
      "pubsub_endpoint[0].pub[0]: 'globex/orders' is not tenant 'acme''s: an entry of a tenant names only its own resources",
      "pubsub_endpoint[0].sub[1]: '/orders' is not tenant 'acme''s: an entry of a tenant names only its own resources",
      "pubsub_endpoint[1].services[0]: 'globex/shop' is not tenant 'acme''s: an entry of a tenant names only its own resources",
      "pubsub_subscription[0].topics[1]: 'globex/orders' is not tenant 'acme''s: an entry naming tenant 'acme''s resources names no other's",
      "pubsub_subscription[1].endpoint: 'erp.platform' is not tenant 'acme''s: an entry naming tenant 'acme''s resources names no other's",
      "pubsub_subscription[0].topics[1]: endpoint 'acme/erp' has no subscription permission for 'globex/orders'",
      "pubsub_subscription[1].endpoint: no pub/sub endpoint named 'erp.platform'",
    ]);
  });

  it("keeps the platform's endpoints to platform topics and services, and tenants' names to declared tenants", () => {
    expect(
      issues(`
tenants: [{ name: acme }]
security: [{ name: sec.erp, type: basic_auth, username: erp, password: "pw-123456" }]
pubsub_topic: [{ name: /orders }, { name: acme/orders }, { name: ghost/orders }]
pubsub_endpoint:
  - { name: erp, security: sec.erp, pub: ['/**', 'acme/**'], sub: [acme/orders] }
  - { name: billing, services: [billing, acme/billing], pub: ['/orders'] }
`),
    ).toEqual([
      "pubsub_topic[2].name: 'ghost/orders' is a topic of tenant 'ghost', which is not declared (a platform topic starts with '/')",
      "pubsub_endpoint[0].pub[1]: 'acme/**' names tenant 'acme''s topics: a platform endpoint reaches platform topics only (starting with '/')",
      "pubsub_endpoint[0].sub[0]: 'acme/orders' names tenant 'acme''s topics: a platform endpoint reaches platform topics only (starting with '/')",
      "pubsub_endpoint[1].services[1]: 'acme/billing' is a service of tenant 'acme': it publishes to its tenant's topics, through an endpoint in its tenant's config",
    ]);
  });
});
