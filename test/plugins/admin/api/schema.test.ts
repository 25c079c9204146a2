import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSource, validate } from '../../../../kernel/config/store.ts';
import { ConfigError } from '../../../../kernel/config/store.ts';
import { findBundledPluginFiles, loadPlugins } from '../../../../kernel/plugin-loader.ts';
import type { KernelApi, Plugin } from '../../../../kernel/plugin.ts';
import { configSectionSchemas } from '../../../../kernel/config/compose.ts';
import { redactSecrets, resourceSections } from '../../../../plugins/admin/api/catalogue.ts';
import { adminOptionsSchema, importSchema, loginSchema } from '../../../../plugins/admin/api/schema.ts';
import { variableName } from '../../../../plugins/admin/api/transfer.ts';

const EXAMPLES = join(import.meta.dirname, '../../../../examples/plugins');

async function bundled(extra: Record<string, unknown> = {}): Promise<Plugin[]> {
  return (await loadPlugins(extra as never, '.', findBundledPluginFiles())).map((l) => l.plugin);
}

const errorsOf = (fn: () => unknown): string[] => {
  try {
    fn();
    return [];
  } catch (err) {
    return err instanceof ConfigError ? err.issues : [String(err)];
  }
};

describe('server.admin', () => {
  it('defaults to an enabled listener on 127.0.0.1:17011', async () => {
    const config = validate(readSource('{}', {}), await bundled(), {});
    expect(config.server.admin).toEqual({ enabled: true, host: '127.0.0.1', port: 17011 });
  });

  it('refuses unknown keys and bad ports with their paths', async () => {
    const plugins = await bundled();
    expect(errorsOf(() => validate(readSource('server: { admin: { port: 70000 } }', {}), plugins, {}))).toEqual([expect.stringMatching(/^server\.admin\.port: /)]);
    expect(errorsOf(() => validate(readSource('server: { admin: { prot: 1 } }', {}), plugins, {}))).toEqual(['server.admin.prot: unknown key']);
  });

  it('is unknown while the admin plugin is disabled', async () => {
    const plugins = (await bundled()).filter((p) => p.name !== 'admin');
    expect(errorsOf(() => validate(readSource('server: { admin: { port: 1 } }', {}), plugins, {}))).toEqual(['server.admin: unknown key']);
  });
});

describe('plugin options and request bodies', () => {
  it('options default and are bounded', () => {
    expect(adminOptionsSchema.parse(undefined)).toEqual({ session_ttl_minutes: 60, login_failures_per_minute: 5 });
    expect(adminOptionsSchema.safeParse({ session_ttl_minutes: 0 }).success).toBe(false);
    expect(adminOptionsSchema.safeParse({ other: 1 }).success).toBe(false);
  });

  it('login takes an account name (admin by default) and a password', () => {
    expect(loginSchema.parse({ password: 'x' })).toEqual({ username: 'admin', password: 'x' });
    expect(loginSchema.parse({ username: 'acme/dev', password: 'x' })).toEqual({ username: 'acme/dev', password: 'x' });
    expect(loginSchema.safeParse({ username: '', password: 'x' }).success).toBe(false);
    expect(loginSchema.safeParse({ password: '' }).success).toBe(false);
  });

  it('an import is sections of entry lists', () => {
    expect(importSchema.safeParse({ channel_rest: [{ name: 'a' }] }).success).toBe(true);
    expect(importSchema.safeParse({ channel_rest: { name: 'a' } }).success).toBe(false);
  });
});

describe('resource catalogue from the composed schema', () => {
  const catalogueOf = (plugins: Plugin[]) => resourceSections({ configSections: () => configSectionSchemas(plugins) } as unknown as KernelApi);

  it('has every named-entry list section, and no section without names (pubsub_subscription) or the server section', async () => {
    const names = catalogueOf(await bundled()).map((s) => s.name);
    expect(names.sort()).toEqual(['amqp_connection', 'cache', 'channel_amqp', 'channel_file', 'channel_imap', 'channel_mqtt', 'channel_rest', 'groups', 'mqtt_connection', 'outgoing_rest', 'pubsub_endpoint', 'pubsub_topic', 'scheduler_job', 'secrets', 'security', 'sftp_connection', 'smtp_connection', 'sql_connection', 'tenants']);
  });

  it("includes third-party plugins' parts with no admin code: the JWT security type and the CSV channel fields", async () => {
    const plugins = await bundled({ jwt: { module: join(EXAMPLES, 'jwt/plugin.ts') }, csv: { module: join(EXAMPLES, 'csv/plugin.ts') } });
    const sections = catalogueOf(plugins);
    const security = sections.find((s) => s.name === 'security')!;
    const jwt = (security.schema.oneOf as Array<Record<string, any>>).find((v) => v.properties.type.const === 'jwt');
    expect(jwt?.properties.algorithms.description).toBeTruthy();
    // The JWT secret is not marked writeOnly by its plugin: its name alone keeps it write-only.
    expect(security.writeOnly).toContain('secret');
    const channel = sections.find((s) => s.name === 'channel_rest')!;
    expect((channel.schema.properties as Record<string, any>).csv.description).toMatch(/CSV settings/);
  });

  it('write-only keys come from writeOnly marks (named secret value) and secret-looking names', async () => {
    const sections = catalogueOf(await bundled());
    expect(sections.find((s) => s.name === 'secrets')!.writeOnly).toEqual(['value']);
    expect(sections.find((s) => s.name === 'cache')!.writeOnly).toEqual(['redis_url']);
    expect(sections.find((s) => s.name === 'security')!.writeOnly).toEqual(['client_secret', 'key', 'password']);
    expect(sections.find((s) => s.name === 'channel_rest')!.writeOnly).toEqual([]);
  });

  it('op arguments are redacted by key in audit rows', () => {
    expect(redactSecrets({ name: 'n', value: 'v', configValue: 'c', hash: 'h', configHash: 'h2', nested: [{ password: 'p' }], kind: 'channel' })).toEqual({
      name: 'n',
      value: '[redacted]',
      configValue: '[redacted]',
      hash: '[redacted]',
      configHash: '[redacted]',
      nested: [{ password: '[redacted]' }],
      kind: 'channel',
    });
  });

  it('export variables are upper-case identifiers', () => {
    expect(variableName('security', 'crm-oauth.v2', 'client_secret')).toBe('SVC_SECRET_SECURITY_CRM_OAUTH_V2_CLIENT_SECRET');
  });
});
