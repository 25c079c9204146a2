import { describe, expect, it } from 'vitest';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';
import { readSource, validate } from '../../../../kernel/config/store.ts';
import jsonPlugin from '../../../../plugins/formats/json/plugin.ts';
import basicAuthPlugin from '../../../../plugins/security/basic-auth/plugin.ts';
import groupsPlugin from '../../../../plugins/security/groups/plugin.ts';
import ntlmPlugin from '../../../../plugins/security/ntlm/plugin.ts';
import { identityOf, type NtlmDefinition } from '../../../../plugins/security/ntlm/schema.ts';

function parse(yaml: string, env: NodeJS.ProcessEnv = {}): SvcConfig {
  return validate(readSource(yaml, env), [jsonPlugin, basicAuthPlugin, groupsPlugin, ntlmPlugin], {});
}

describe('ntlm definitions', () => {
  it('take the three username forms, the password from the environment', () => {
    const config = parse(
      `security:
  - { name: a, type: ntlm, username: 'CORP\\alice', password: "\${NTLM_PASSWORD}" }
  - { name: b, type: ntlm, username: bob@corp.example, password: p, workstation: WS1 }
  - { name: c, type: ntlm, username: carol, domain: corp, password: p }
`,
      { NTLM_PASSWORD: 's3cret' },
    );
    expect(config.security).toEqual([
      { name: 'a', type: 'ntlm', username: 'CORP\\alice', password: 's3cret' },
      { name: 'b', type: 'ntlm', username: 'bob@corp.example', password: 'p', workstation: 'WS1' },
      { name: 'c', type: 'ntlm', username: 'carol', domain: 'corp', password: 'p' },
    ]);
    expect(config.security.map((s) => identityOf(s as NtlmDefinition))).toEqual([
      { user: 'alice', domain: 'CORP', workstation: '' },
      { user: 'bob@corp.example', domain: '', workstation: 'WS1' },
      { user: 'carol', domain: 'corp', workstation: '' },
    ]);
  });

  it.each([
    ['no password', 'username: u', /security\[0\]\.password/],
    ['an empty password', 'username: u, password: ""', /password: must not be empty/],
    ['an empty username', 'username: "", password: p', /username: must not be empty/],
    ['a username that is only a domain', "username: 'CORP\\', password: p", /username: must be `user`, `DOMAIN\\user` or `user@domain`/],
    ['two backslashes', "username: 'A\\B\\c', password: p", /username: must be/],
    ['a control character', 'username: "a\\tb", password: p', /control characters/],
    ['an unknown field', 'username: u, password: p, realm: x', /security\[0\]/],
  ])('refuse %s', (_label, fields, message) => {
    expect(() => parse(`security:\n  - { name: a, type: ntlm, ${fields} }\n`)).toThrow(message);
  });

  it.each([
    ["'CORP\\alice'", 'CORP'],
    ['alice@corp.example', 'corp'],
  ])('refuse a domain given twice (%s with domain)', (username, domain) => {
    expect(() => parse(`security:\n  - { name: a, type: ntlm, username: ${username}, domain: ${domain}, password: p }\n`)).toThrow(
      /security\[0\]\.domain: the username already names the domain/,
    );
  });

  it('are refused on channels: NTLM is for outgoing connections', () => {
    expect(() =>
      parse(`security:
  - { name: corp, type: ntlm, username: u, password: p }
channel_rest:
  - { name: c, url_path: /c, service: s, security: corp }
`),
    ).toThrow("channel_rest[0].security: 'corp' is a ntlm definition: NTLM authenticates outgoing connections only, not channels");
  });

  it('are refused as group members (the groups plugin takes client definitions only)', () => {
    expect(() =>
      parse(`security:
  - { name: corp, type: ntlm, username: u, password: p }
groups:
  - { name: g, members: [corp] }
`),
    ).toThrow("groups[0].members[0]: 'corp' is a ntlm definition; members must be basic_auth or apikey");
  });
});
