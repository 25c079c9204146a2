import { describe, expect, it } from 'vitest';
import { parseConfig } from '../schema-support.ts';

const REQUIRED: Record<string, string> = { username: 'app-1', client_secret: '"${SECRET}"', auth_server_url: '"https://auth.example.com/oauth/token"' };

function minimal(without?: string): string {
  const fields = Object.entries(REQUIRED).filter(([key]) => key !== without);
  return `{ name: oauth, type: bearer_token, ${fields.map(([key, value]) => `${key}: ${value}`).join(', ')} }`;
}

function bearer(extra: string): string {
  return `security:\n  - { name: oauth, type: bearer_token, username: app-1, client_secret: s3cret, auth_server_url: "https://auth.example.com/token"${extra} }\n`;
}

describe('bearer_token definitions', () => {
  it('need a client ID, a secret and the token endpoint; the rest has the spec defaults', () => {
    const config = parseConfig(`security:\n  - ${minimal()}\n`, { SECRET: 'from-env' });
    expect(config.security).toEqual([
      {
        name: 'oauth',
        type: 'bearer_token',
        username: 'app-1',
        client_secret: 'from-env',
        auth_server_url: 'https://auth.example.com/oauth/token',
        scopes: [],
        client_id_field: 'client_id',
        client_secret_field: 'client_secret',
        grant_type: 'client_credentials',
        extra_fields: {},
        data_format: 'form',
        token_timeout_ms: 10_000,
      },
    ]);
  });

  it.each([
    ['username', /security\[0\]\.username/],
    ['client_secret', /security\[0\]\.client_secret/],
    ['auth_server_url', /security\[0\]\.auth_server_url/],
  ])('refuse a definition without %s', (field, message) => {
    expect(() => parseConfig(`security:\n  - ${minimal(field)}\n`, { SECRET: 'x' })).toThrow(message);
  });

  it('take every field of the spec table', () => {
    const config = parseConfig(
      bearer(', scopes: "read\\nwrite", client_id_field: appId, client_secret_field: appKey, grant_type: urn:custom, extra_fields: { audience: api, tenant: 7 }, data_format: json, token_timeout_ms: 500'),
    );
    expect(config.security[0]).toMatchObject({
      scopes: ['read', 'write'],
      client_id_field: 'appId',
      client_secret_field: 'appKey',
      grant_type: 'urn:custom',
      extra_fields: { audience: 'api', tenant: '7' },
      data_format: 'json',
      token_timeout_ms: 500,
    });
  });

  it.each([
    ['newline-separated (the spec)', '"read\\n\\n  write:all \\r\\nread\\n"', ['read', 'write:all']],
    ['a YAML list', '[read, "write:all", read]', ['read', 'write:all']],
    ['empty', '""', []],
  ])('read scopes %s, dropping blank lines and repeats', (_label, scopes, expected) => {
    expect(parseConfig(bearer(`, scopes: ${scopes}`)).security[0]!.scopes).toEqual(expected);
  });

  it.each([
    ['two scopes on one line', '"read write"', /security\[0\]\.scopes: scope 'read write' is not an OAuth scope/],
    ['a quote', '[\'say"hi\']', /is not an OAuth scope/],
    ['a backslash', '["a\\\\b"]', /is not an OAuth scope/],
    ['a non-ASCII character', '[lecturé]', /is not an OAuth scope/],
  ])('refuse scopes with %s', (_label, scopes, message) => {
    expect(() => parseConfig(bearer(`, scopes: ${scopes}`))).toThrow(message);
  });

  it('read extra fields as key=value lines too (the spec wording)', () => {
    expect(parseConfig(bearer(', extra_fields: "audience=https://api.example.com\\nresource = a=b\\n"')).security[0]!.extra_fields).toEqual({
      audience: 'https://api.example.com',
      resource: 'a=b',
    });
  });

  it.each([
    ['a line without =', '"audience"', /security\[0\]\.extra_fields: 'audience' is not a key=value pair/],
    ['an empty key', '"=x"', /'=x' is not a key=value pair/],
    ['a key given twice', '"a=1\\na=2"', /'a' is given twice/],
    ['grant_type', '{ grant_type: password }', /security\[0\]\.extra_fields\.grant_type: 'grant_type' is set by the token request itself/],
    ['scope', '{ scope: admin }', /extra_fields\.scope: 'scope' is set by the token request itself/],
    ['the client id field', '{ client_id: other }', /extra_fields\.client_id: 'client_id' is set by the token request itself/],
    ['the client secret field', '{ client_secret: other }', /extra_fields\.client_secret/],
  ])('refuse extra fields with %s', (_label, fields, message) => {
    expect(() => parseConfig(bearer(`, extra_fields: ${fields}`))).toThrow(message);
  });

  it.each([
    ['one name for the id and the secret', ', client_secret_field: client_id', /security\[0\]\.client_secret_field: must differ from client_id_field/],
    ['the id under grant_type', ', client_id_field: grant_type', /security\[0\]\.client_id_field: 'grant_type' is a field the token request sets itself/],
    ['an empty field name', ', client_id_field: ""', /security\[0\]\.client_id_field/],
    ['another data format', ', data_format: xml', /security\[0\]\.data_format/],
    ['a zero timeout', ', token_timeout_ms: 0', /security\[0\]\.token_timeout_ms/],
    ['an unknown field', ', password: x', /security\[0\]/],
  ])('refuse %s', (_label, extra, message) => {
    expect(() => parseConfig(bearer(extra))).toThrow(message);
  });

  it('refuse an empty secret (e.g. an unset variable written as "")', () => {
    expect(() => parseConfig(bearer('').replace('client_secret: s3cret', 'client_secret: ""'))).toThrow(/security\[0\]\.client_secret/);
  });

  it.each([
    ['not a URL', 'token-endpoint', /auth_server_url: must be an http or https URL/],
    ['another scheme', 'ftp://auth.example.com/token', /auth_server_url: must be an http or https URL/],
    ['credentials in the URL', 'https://app:secret@auth.example.com/token', /auth_server_url: must not carry credentials/],
  ])('refuse an auth server URL that is %s', (_label, url, message) => {
    expect(() => parseConfig(bearer('').replace('https://auth.example.com/token', url))).toThrow(message);
  });

  it('accept plain http (a loopback or in-house auth server)', () => {
    expect(parseConfig(bearer('').replace('https://auth.example.com/token', 'http://127.0.0.1:8080/token')).security[0]!.auth_server_url).toBe('http://127.0.0.1:8080/token');
  });

  it('are not usable on channels (spec): a channel naming one is refused, not left open', () => {
    expect(() => parseConfig(`${bearer('')}channel_rest:\n  - { name: c, url_path: /c, service: s, security: oauth }\n`)).toThrow(
      /channel_rest\[0\]\.security: 'oauth' is a bearer_token definition: Bearer tokens authenticate outgoing connections only, not channels/,
    );
  });

  it('are not group members (refused by the groups plugin, which takes basic_auth and apikey only)', () => {
    expect(() => parseConfig(`${bearer('')}groups:\n  - { name: g, members: [oauth] }\n`)).toThrow(
      /groups\[0\]\.members\[0\]: 'oauth' is a bearer_token definition; members must be basic_auth or apikey/,
    );
  });
});
