import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, readSource, validate } from '../../../kernel/config/store.ts';
import { loadPlugins } from '../../../kernel/plugin-loader.ts';
import type { Plugin } from '../../../kernel/plugin.ts';
import type { SvcConfig } from '../../../kernel/config/schema.ts';

let plugins: Plugin[];
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-tenants-'));
  plugins = (await loadPlugins({}, dir)).map((l) => l.plugin);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function load(yaml: string, env: NodeJS.ProcessEnv = {}): SvcConfig {
  return validate(readSource(yaml, env), plugins, env, dir);
}

function issues(yaml: string): string[] {
  try {
    load(yaml);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  return [];
}

const ACME_INLINE = `
tenants:
  - name: acme
    config:
      security:
        - { name: basic, type: basic_auth, username: u, password: "pw-123456" }
      channel_rest:
        - { name: orders, url_path: /orders, service: orders, security: basic }
        - { name: open, url_path: "/open/{id}", service: orders, security: none }
      outgoing_rest:
        - { name: crm, address: "https://crm.example.com", allowed_services: [orders] }
`;

describe('tenant config: short names in, qualified names out', () => {
  it("qualifies every name and reference of a tenant's inline sections, and puts its channels under /t/<name>", () => {
    const config = load(ACME_INLINE);
    expect(config.security.map((s) => s.name)).toEqual(['acme/basic']);
    expect(config.channel_rest.map((c) => [c.name, c.url_path, c.service, c.security])).toEqual([
      ['acme/orders', '/t/acme/orders', 'acme/orders', 'acme/basic'],
      ['acme/open', '/t/acme/open/{id}', 'acme/orders', 'none'],
    ]);
    const out = (config as unknown as { outgoing_rest: Array<{ name: string; allowed_services: string[] }> }).outgoing_rest;
    expect(out.map((o) => [o.name, o.allowed_services])).toEqual([['acme/crm', ['acme/orders']]]);
  });

  it('lets two tenants have the same names side by side, each under its own prefix', () => {
    const config = load(`
tenants:
  - { name: acme, config: { channel_rest: [{ name: orders, url_path: /orders, service: orders, security: none }] } }
  - { name: globex, url_prefix: /globex, config: { channel_rest: [{ name: orders, url_path: /orders, service: orders, security: none }] } }
channel_rest:
  - { name: orders, url_path: /orders, service: orders, security: none }
`);
    expect(config.channel_rest.map((c) => [c.name, c.url_path, c.service])).toEqual([
      ['orders', '/orders', 'orders'],
      ['acme/orders', '/t/acme/orders', 'acme/orders'],
      ['globex/orders', '/globex/orders', 'globex/orders'],
    ]);
  });

  it("keeps a tenant inside its namespace whatever it writes: another tenant's name becomes a name of its own", () => {
    const config = load(`
tenants:
  - { name: acme, config: { channel_rest: [{ name: steal, url_path: /x, service: globex/orders, security: globex/basic }], security: [{ name: globex/basic, type: basic_auth, username: u, password: pw-123456 }] } }
  - { name: globex }
`);
    expect(config.channel_rest[0]).toMatchObject({ service: 'acme/globex/orders', security: 'acme/globex/basic' });
  });

  it('reads a tenant file relative to the main config, and refuses ${VARIABLE} in it', () => {
    writeFileSync(join(dir, 'acme.yaml'), 'channel_rest:\n  - { name: a, url_path: /a, service: a, security: none }\n');
    expect(load('tenants: [{ name: acme, config_file: acme.yaml }]').channel_rest[0]).toMatchObject({ name: 'acme/a', url_path: '/t/acme/a' });
    writeFileSync(join(dir, 'leak.yaml'), 'outgoing_rest:\n  - { name: x, address: "https://x.example", headers: { k: "${HOME}" } }\n');
    expect(issues('tenants: [{ name: acme, config_file: leak.yaml }]')).toEqual([expect.stringMatching(/^tenants\[acme\]\.config_file \(leak\.yaml\): a tenant's config file takes no \$\{VARIABLE\}/)]);
    expect(issues('tenants: [{ name: acme, config_file: missing.yaml }]')).toEqual([expect.stringMatching(/missing\.yaml: ENOENT/)]);
  });

  it("names a tenant's mistakes where the tenant wrote them", () => {
    expect(issues('tenants: [{ name: acme, config: { channel_rest: [{ name: a, url_path: /a, service: a, security: none, method: FETCH }] } }]')).toEqual([
      expect.stringMatching(/^tenants\[acme\]\.config\.channel_rest\[0\]\.method: /),
    ]);
    expect(issues('tenants: [{ name: acme, config: { channel_rest: [{ name: a, url_path: /a, service: a, security: nobody }] } }]')).toEqual([
      "tenants[acme].config.channel_rest[0].security: no security definition or group named 'acme/nobody' (use 'none' for no server-side authentication)",
    ]);
  });

  it('refuses platform sections, unknown sections and lists that are not lists in a tenant config', () => {
    expect(issues('tenants: [{ name: acme, config: { server: [] } }]')).toEqual(["tenants[acme].config.server: a tenant has no 'server' section (it is the platform's)"]);
    expect(issues('tenants: [{ name: acme, config: { nonsense: [] } }]')).toEqual(["tenants[acme].config.nonsense: no enabled plugin has a section 'nonsense' of named entries"]);
    expect(issues('tenants: [{ name: acme, config_file: acme-bad.yaml }]'.replace('acme-bad.yaml', writeBad()))).toEqual([expect.stringMatching(/channel_rest: must be a list of entries$/)]);
  });
});

function writeBad(): string {
  writeFileSync(join(dir, 'acme-bad.yaml'), 'channel_rest: { name: a }\n');
  return 'acme-bad.yaml';
}

describe('tenant checks on the whole config', () => {
  it("refuses an entry of one tenant, written qualified in the main file, that names another tenant's or the platform's resource", () => {
    expect(
      issues(`
tenants: [{ name: acme }, { name: globex }]
channel_rest:
  - { name: acme/orders, url_path: /t/acme/orders, service: globex/orders, security: none }
  - { name: acme/mine, url_path: /t/acme/mine, service: platform_service, security: none }
`),
    ).toEqual([
      "channel_rest[0].service: 'globex/orders' is not tenant 'acme''s: an entry of a tenant names only its own resources",
      "channel_rest[1].service: 'platform_service' is not tenant 'acme''s: an entry of a tenant names only its own resources",
    ]);
  });

  it("keeps each tenant's URL space its own: no channel of the platform or another tenant under it, no overlapping prefixes", () => {
    expect(
      issues(`
tenants: [{ name: acme }, { name: globex, url_prefix: /t/acme/g }]
channel_rest:
  - { name: shadow, url_path: /t/acme/orders, service: x, security: none }
  - { name: acme/outside, url_path: /orders, service: acme/x, security: none }
`),
    ).toEqual([
      "tenants[1].url_prefix: '/t/acme/g' overlaps tenant 'acme''s URL prefix '/t/acme': one tenant could shadow the other's routes",
      "channel_rest[0].url_path: /t/acme is tenant 'acme''s URL space; no other channel may be under it",
      "channel_rest[1].url_path: a channel of tenant 'acme' must be under its URL prefix /t/acme (e.g. /t/acme/orders)",
    ]);
    // Prefixes compare by whole segments: /t/ab is not under /t/a.
    expect(issues('tenants: [{ name: a }, { name: ab }]')).toEqual([]);
  });

  it('refuses dot segments in a tenant channel’s path: clients resolve them away, so it could not be reached as written', () => {
    expect(issues('tenants: [{ name: acme, config: { channel_rest: [{ name: up, url_path: /../admin, service: x, security: none }] } }]')).toEqual([
      "tenants[acme].config.channel_rest[0].url_path: must not contain '.' or '..' segments",
    ]);
    expect(issues('channel_rest: [{ name: dot, url_path: /a/./b, service: x, security: none }]')).toEqual(["channel_rest[0].url_path: must not contain '.' or '..' segments"]);
  });

  it("refuses a path of the server's machine in a tenant's entry; the platform's entries may name one", () => {
    expect(issues('tenants: [{ name: acme, config: { outgoing_rest: [{ name: crm, address: "https://crm.example.com", tls: { ca_file: /etc/shadow } }] } }]')).toEqual([
      expect.stringMatching(/^tenants\[acme\]\.config\.outgoing_rest\[0\]\.tls\.ca_file: a tenant's entry names no file or folder of the server/),
    ]);
    expect(issues('outgoing_rest: [{ name: crm, address: "https://crm.example.com", tls: { ca_file: /etc/ssl/ca.pem } }]')).toEqual([]);
  });

  it('qualifies references inside lists and unions too: group members, secret services, job services', () => {
    const config = load(`
tenants:
  - name: acme
    config:
      security: [{ name: k1, type: apikey, key: "key-1234567890abcdef-XYZ" }]
      groups: [{ name: clients, members: [k1] }]
      secrets: [{ name: signing, services: [orders] }]
      scheduler_job: [{ name: nightly, service: orders, every: 1h }]
`);
    const c = config as unknown as Record<string, Array<Record<string, unknown>>>;
    expect(c.groups![0]).toMatchObject({ name: 'acme/clients', members: ['acme/k1'] });
    expect(c.secrets![0]).toMatchObject({ name: 'acme/signing', services: ['acme/orders'] });
    expect(c.scheduler_job![0]).toMatchObject({ name: 'acme/nightly', service: 'acme/orders' });
  });
});
