import { describe, expect, it } from 'vitest';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';
import { ConfigError, readSource, validate } from '../../../../kernel/config/store.ts';
import secretsPlugin from '../../../../plugins/secrets/named/plugin.ts';
import vaultPlugin from '../../../../plugins/secrets/vault/plugin.ts';

function parse(yaml: string, env: NodeJS.ProcessEnv = {}): SvcConfig {
  return validate(readSource(yaml, env), [secretsPlugin, vaultPlugin], {});
}

function issues(yaml: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    parse(yaml, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.join('\n');
    throw err;
  }
  throw new Error('the config was accepted');
}

describe('secrets: section', () => {
  it('is empty when absent, and an entry needs only a name', () => {
    expect(parse('{}').secrets).toEqual([]);
    expect(parse('secrets:\n  - { name: github-webhook }\n').secrets).toEqual([{ name: 'github-webhook', services: [] }]);
  });

  it('takes the value from the environment and the services that may use it', () => {
    const config = parse('secrets:\n  - { name: stripe.webhook_1, value: "${STRIPE_SECRET}", services: [webhook-stripe, billing] }\n', { STRIPE_SECRET: 'whsec_abc' });
    expect(config.secrets).toEqual([{ name: 'stripe.webhook_1', value: 'whsec_abc', services: ['webhook-stripe', 'billing'] }]);
  });

  it.each([
    ['a name with a space', '{ name: "a b" }', /secrets\[0\]\.name: letters, digits/],
    ['a name starting with a dot', '{ name: .hidden }', /secrets\[0\]\.name: letters, digits/],
    ['a name over 128 characters', `{ name: ${'n'.repeat(129)} }`, /secrets\[0\]\.name: letters, digits/],
    ['an empty value', '{ name: s, value: "" }', /secrets\[0\]\.value: must not be empty/],
    ['a value over 4096 characters', `{ name: s, value: ${'v'.repeat(4097)} }`, /secrets\[0\]\.value: must be at most 4096 characters/],
    ['an empty service name', '{ name: s, services: [""] }', /secrets\[0\]\.services\[0\]/],
    ['an unknown field', '{ name: s, key: x }', /secrets\[0\]/],
  ])('refuses %s', (_label, entry, message) => {
    expect(issues(`secrets:\n  - ${entry}\n`)).toMatch(message);
  });

  it('refuses two secrets with one name', () => {
    expect(issues('secrets:\n  - { name: s }\n  - { name: s }\n')).toMatch(/secrets\[1\]\.name: duplicate secret name 's' \(also secrets\[0\]\)/);
  });

  it('refuses a value whose environment variable is not set', () => {
    expect(issues('secrets:\n  - { name: s, value: "${NOT_SET_ANYWHERE}" }\n')).toMatch(/NOT_SET_ANYWHERE is not set/);
  });

  it('never quotes a value in its errors', () => {
    const text = issues('secrets:\n  - { name: t, value: "${SET}", extra: 1 }\n  - { name: t, value: "${SET}" }\n  - { name: u, value: "${LONG}" }\n', {
      SET: 'the-hidden-value',
      LONG: 'the-long-hidden-value'.repeat(300),
    });
    expect(text).toMatch(/secrets\[0\]/);
    expect(text).toMatch(/secrets\[2\]\.value/);
    expect(text).not.toContain('hidden-value');
  });

  it('is not a section without the plugin', () => {
    expect(() => validate(readSource('secrets:\n  - { name: s }\n', {}), [vaultPlugin], {})).toThrow(ConfigError);
  });
});
