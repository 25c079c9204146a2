import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, readSource, validate } from '../../../../kernel/config/store.ts';
import { checkPluginShape } from '../../../../kernel/plugin-loader.ts';
import jsonPlugin from '../../../../plugins/formats/json/plugin.ts';
import jwtPlugin from '../../../../examples/plugins/jwt/plugin.ts';
import { jwtEntrySchema, jwtShape } from '../../../../examples/plugins/jwt/schema.ts';

const SECRET = 's'.repeat(32);
const dir = mkdtempSync(join(tmpdir(), 'svc-jwt-schema-'));
const JWKS = join(dir, 'jwks.json');
writeFileSync(JWKS, JSON.stringify({ keys: [{ kty: 'RSA', n: 'AQAB', e: 'AQAB' }] }));
writeFileSync(join(dir, 'not-json.json'), '{');
writeFileSync(join(dir, 'no-keys.json'), '{"keys": []}');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function issuesOf(security: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): string[] {
  const yaml = JSON.stringify({ security: [{ name: 'tokens', type: 'jwt', ...security }], channel_rest: [{ name: 'c', url_path: '/c', service: 's', security: 'tokens' }] });
  try {
    validate(readSource(yaml, env), [jsonPlugin, jwtPlugin], {});
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  return [];
}

describe('jwt plugin schema', () => {
  it('is a well-formed security plugin contributing the jwt type', () => {
    expect(checkPluginShape(jwtPlugin, 'test')).toBe(jwtPlugin);
    expect(jwtPlugin.kind).toBe('security');
    expect(Object.keys(jwtPlugin.contributes?.securityTypes ?? {})).toEqual(['jwt']);
    expect(jwtPlugin.configSchema.parse(undefined)).toEqual({});
    expect(jwtPlugin.configSchema.safeParse({ realm: 'x' }).success).toBe(false);
  });

  it('describes every field', () => {
    for (const [key, schema] of Object.entries(jwtShape)) expect(schema.description, key).toBeTruthy();
  });

  it('defaults the clock tolerance to 0 and bounds it', () => {
    expect(jwtEntrySchema.parse({ algorithms: ['HS256'] }).clock_tolerance_s).toBe(0);
    expect(jwtEntrySchema.safeParse({ algorithms: ['HS256'], clock_tolerance_s: 301 }).success).toBe(false);
    expect(jwtEntrySchema.safeParse({ algorithms: ['HS256'], clock_tolerance_s: 1.5 }).success).toBe(false);
  });

  it('accepts an HS256 definition with a secret from the environment, and an RS256 one with a JWKS file', () => {
    expect(issuesOf({ algorithms: ['HS256'], secret: '${JWT_SECRET}', issuer: 'https://idp', audience: ['a', 'b'] }, { JWT_SECRET: SECRET })).toEqual([]);
    expect(issuesOf({ algorithms: ['RS256', 'ES256'], jwks_file: JWKS, clock_tolerance_s: 30 })).toEqual([]);
    expect(issuesOf({ algorithms: ['HS256', 'RS256'], secret: SECRET, jwks_file: JWKS })).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['no algorithms', { secret: SECRET }, /security\[0\]\.algorithms/],
    ['an empty algorithm list', { algorithms: [], secret: SECRET }, /security\[0\]\.algorithms/],
    ['alg none', { algorithms: ['none'], secret: SECRET }, /security\[0\]\.algorithms\[0\]/],
    ['a short secret', { algorithms: ['HS256'], secret: 'short' }, /security\[0\]\.secret: .*32 characters/],
    ['HS256 without a secret', { algorithms: ['HS256'] }, /security\[0\]\.secret: required/],
    ['RS256 without a JWKS file', { algorithms: ['RS256'] }, /security\[0\]\.jwks_file: required/],
    ['a secret no algorithm uses', { algorithms: ['RS256'], jwks_file: JWKS, secret: SECRET }, /security\[0\]\.secret: unused/],
    ['a JWKS file no algorithm uses', { algorithms: ['HS256'], secret: SECRET, jwks_file: JWKS }, /security\[0\]\.jwks_file: unused/],
    ['a missing JWKS file', { algorithms: ['RS256'], jwks_file: join(dir, 'nope.json') }, /security\[0\]\.jwks_file: cannot read .*ENOENT/],
    ['a JWKS file that is not JSON', { algorithms: ['RS256'], jwks_file: join(dir, 'not-json.json') }, /is not JSON/],
    ['a JWKS file without keys', { algorithms: ['RS256'], jwks_file: join(dir, 'no-keys.json') }, /is not a JSON Web Key Set/],
    ['an unknown key', { algorithms: ['HS256'], secret: SECRET, leeway: 5 }, /leeway/],
  ])('refuses %s', (_label, entry, pattern) => {
    expect(issuesOf(entry).join('\n')).toMatch(pattern);
  });

  it('refuses a ${VAR} secret whose variable is not set', () => {
    expect(issuesOf({ algorithms: ['HS256'], secret: '${JWT_SECRET}' }).join()).toMatch(/JWT_SECRET is not set/);
  });
});
