import { describe, expect, it } from 'vitest';
import { parseConfig } from '../schema-support.ts';

const channel = (security: string) => `channel_rest:\n  - { name: c, url_path: /c, service: s, security: ${security} }\n`;

describe('basic_auth definitions', () => {
  it('take a username and an optional password, from the environment too', () => {
    const config = parseConfig(
      `security:\n  - { name: crm, type: basic_auth, username: crm, password: "\${CRM_PW}" }\n  - { name: erp, type: basic_auth, username: erp }\n${channel('crm')}`,
      { CRM_PW: 'pw:with:colons' },
    );
    expect(config.security).toEqual([
      { name: 'crm', type: 'basic_auth', username: 'crm', password: 'pw:with:colons' },
      { name: 'erp', type: 'basic_auth', username: 'erp' },
    ]);
  });

  it.each([
    ['a missing username', '{ name: a, type: basic_auth }', /security\[0\]\.username/],
    ['an empty username', '{ name: a, type: basic_auth, username: "" }', /username: must not be empty/],
    ['a colon in the username', '{ name: a, type: basic_auth, username: "a:b" }', /username: must not contain ':'/],
    ['an empty password', '{ name: a, type: basic_auth, username: a, password: "" }', /password: must not be empty/],
    ['a control character in the password', '{ name: a, type: basic_auth, username: a, password: "a\\tb" }', /password: must not contain control characters/],
    ['an unknown field', '{ name: a, type: basic_auth, username: a, realm: x }', /security\[0\]/],
  ])('refuse %s', (_label, entry, message) => {
    expect(() => parseConfig(`security:\n  - ${entry}\n`)).toThrow(message);
  });

  it('refuse two definitions with the same username', () => {
    expect(() =>
      parseConfig(`security:\n  - { name: a, type: basic_auth, username: same }\n  - { name: b, type: basic_auth, username: same }\n`),
    ).toThrow(/security\[1\]\.username: username 'same' is already used by basic_auth definition 'a'/);
  });

  it('are what a channel names; a channel must name one or say none', () => {
    const defs = 'security:\n  - { name: crm, type: basic_auth, username: crm }\n';
    expect(parseConfig(defs + channel('crm')).channel_rest[0]!.security).toBe('crm');
    expect(parseConfig(defs + channel('none')).channel_rest[0]!.security).toBe('none');
    expect(() => parseConfig(defs + channel('nope'))).toThrow(/no security definition or group named 'nope'/);
    expect(() => parseConfig(`${defs}channel_rest:\n  - { name: c, url_path: /c, service: s }\n`)).toThrow(/say 'none' explicitly/);
  });
});
