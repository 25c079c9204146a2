import { describe, expect, it } from 'vitest';
import { configIssues } from '../../../helpers/config.ts';
import { readSource, validate } from '../../../../kernel/config/store.ts';

const plugins = [
  (await import('../../../../plugins/outgoing/rest/plugin.ts')).default,
  (await import('../../../../plugins/security/basic-auth/plugin.ts')).default,
  (await import('../../../../plugins/security/apikey/plugin.ts')).default,
  (await import('../../../../plugins/security/groups/plugin.ts')).default,
  (await import('../../../../plugins/formats/json/plugin.ts')).default,
];

const issuesOf = (yaml: string) => configIssues(yaml, plugins);

describe('outgoing_rest schema', () => {
  it('fills defaults', () => {
    const cfg = validate(readSource('outgoing_rest:\n  - { name: CRM, address: "https://crm.example.com/api" }\n', {}), plugins, {});
    expect(cfg.outgoing_rest[0]).toEqual({
      name: 'CRM',
      address: 'https://crm.example.com/api',
      url_path: '/',
      timeout_ms: 10_000,
      retry: { max_attempts: 3, base_backoff_ms: 200, max_backoff_ms: 5_000, budget_ms: 30_000 },
      max_connections: 16,
      keep_alive_ms: 4_000,
      max_response_bytes: 16 * 1024 * 1024,
    });
  });

  it('refuses bad addresses, paths and headers, naming the field', () => {
    expect(issuesOf('outgoing_rest:\n  - { name: a, address: "ftp://x" }\n')[0]).toMatch(/^outgoing_rest\[0\]\.address: must be an http/);
    expect(issuesOf('outgoing_rest:\n  - { name: a, address: "https://u:p@x" }\n')[0]).toMatch(/without query, fragment or credentials/);
    expect(issuesOf('outgoing_rest:\n  - { name: a, address: "http://x", url_path: "/a?b=1" }\n')[0]).toMatch(/url_path: must not contain a query/);
    expect(issuesOf('outgoing_rest:\n  - { name: a, address: "http://x", headers: { Host: y } }\n')[0]).toMatch(/headers\.Host: is set by the HTTP client/);
    expect(issuesOf('outgoing_rest:\n  - { name: a, address: "http://x", tls: { reject_unauthorized: false } }\n')).toEqual(['outgoing_rest[0].tls: tls settings apply only to an https address']);
  });

  it('refuses duplicate names and security definitions that are missing or not for outgoing use', () => {
    const yaml = `
security:
  - { name: in-only, type: basic_auth, username: u, password: long-password-1 }
groups:
  - { name: team, members: [in-only] }
outgoing_rest:
  - { name: a, address: "http://x", security: ghost }
  - { name: a, address: "http://x", security: team }
`;
    expect(issuesOf(yaml)).toEqual([
      "outgoing_rest[0].security: no security definition named 'ghost'",
      "outgoing_rest[1].name: duplicate connection name 'a' (also outgoing_rest[0])",
      "outgoing_rest[1].security: no security definition named 'team'",
    ]);
  });
});
