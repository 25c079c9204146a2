import { describe, expect, it } from 'vitest';
import { parseConfig } from '../schema-support.ts';

const DEFS = `security:
  - { name: crm, type: basic_auth, username: crm }
  - { name: billing, type: apikey }
  - { name: oauth, type: bearer_token, username: client, client_secret: s, auth_server_url: "https://auth.example.com/token" }
`;

describe('groups', () => {
  it('hold basic_auth and apikey definitions and can be named by a channel', () => {
    const config = parseConfig(`${DEFS}groups:\n  - { name: partners, members: [crm, billing] }\n  - { name: empty }\nchannel_rest:\n  - { name: c, url_path: /c, service: s, security: partners }\n`);
    expect(config.groups).toEqual([
      { name: 'partners', members: ['crm', 'billing'] },
      { name: 'empty', members: [] },
    ]);
    expect(config.channel_rest[0]!.security).toBe('partners');
  });

  it.each([
    ['an unknown member', '{ name: g, members: [nope] }', /groups\[0\]\.members\[0\]: no security definition named 'nope'/],
    ['a member of another type', '{ name: g, members: [oauth] }', /groups\[0\]\.members\[0\]: 'oauth' is a bearer_token definition; members must be basic_auth or apikey/],
    ['a member listed twice', '{ name: g, members: [crm, crm] }', /groups\[0\]\.members\[1\]: 'crm' is listed twice/],
    ['a group named like a definition', '{ name: crm, members: [] }', /groups\[0\]\.name: 'crm' is also the name of a security definition/],
    ['a group named none', '{ name: none, members: [] }', /groups\[0\]\.name: 'none' is reserved/],
    ['an unknown field', '{ name: g, members: [], channels: [x] }', /groups\[0\]/],
  ])('refuse %s', (_label, group, message) => {
    expect(() => parseConfig(`${DEFS}groups:\n  - ${group}\n`)).toThrow(message);
  });

  it('refuse two groups with one name', () => {
    expect(() => parseConfig(`${DEFS}groups:\n  - { name: g }\n  - { name: g }\n`)).toThrow(/groups\[1\]\.name: duplicate group name 'g'/);
  });
});
