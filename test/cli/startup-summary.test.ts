import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { groupByKind, StartupSummary } from '../../cli/startup-summary.ts';
import { makeProject, startCli } from '../helpers/cli.ts';
import { waitFor } from '../helpers/wait.ts';

/** `svc start`'s summary on stderr (cli/startup-summary.ts), and the log's `server.log_time`. */
const line = (fields: Record<string, unknown>) => JSON.stringify({ level: 40, time: 1, pid: 1, hostname: 'h', ...fields });

describe('the startup summary (unit)', () => {
  it('groups warnings of one kind, naming what each was about, and keeps the others as they were', () => {
    const kinds = groupByKind([
      JSON.parse(line({ definition: 'erp', type: 'basic_auth', msg: 'security definition has a random password nobody knows; set it with `svc secdef set-password erp`' })),
      JSON.parse(line({ definition: 'crm', type: 'basic_auth', msg: 'security definition has a random password nobody knows; set it with `svc secdef set-password crm`' })),
      JSON.parse(line({ msg: 'server.trusted_proxies is not set' })),
      { ...JSON.parse(line({ msg: 'could not open the store' })), level: 50 },
    ]);
    expect(kinds).toEqual([
      'error: could not open the store',
      '2 × security definition has a random password nobody knows; set it with `svc secdef set-password DEFINITION` (definition: erp, crm)',
      'server.trusted_proxies is not set',
    ]);
  });

  it('reads only until it is rendered, and counts deployed services and the admin listener from the log', () => {
    const summary = new StartupSummary();
    summary.tap('{"level":30,"time":1,"service":"a","msg":"service deployed"}');
    summary.tap('{"level":30,"time":1,"service":"b","msg":"service deployed"}');
    summary.tap('{"level":30,"time":1,"address":"http://127.0.0.1:9","msg":"svc admin listening"}');
    summary.tap(line({ msg: 'one warning' }));
    summary.tell('first start: the admin password is pw-123 (shown once)');
    const text = summary.render({ address: 'http://127.0.0.1:8', configPath: '/p/config/svc.yaml', startedAt: 1_000, now: 2_500, cwd: '/p' });
    summary.tap(line({ msg: 'after the summary' }));
    expect(text).toBe(
      [
        'svc started in 1.5 s: 2 services deployed, config config/svc.yaml',
        '  channels   http://127.0.0.1:8',
        '  Dashboard  http://127.0.0.1:9/admin/',
        '  first start: the admin password is pw-123 (shown once)',
        '  1 kind of warning at startup (each line of the log has the details):',
        '    - one warning',
        '',
      ].join('\n'),
    );
  });
});

const CONFIG = `
server: { log_time: iso }
security:
  - { name: erp, type: basic_auth, username: erp }
  - { name: crm, type: basic_auth, username: crm }
channel_rest:
  - { name: hello, url_path: /hello, service: hello, security: none }
`;
const HELLO = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`;

describe('svc start, as a person at a terminal sees it', () => {
  it('prints one summary on stderr with the addresses and one line per kind of warning; a config save does not warn again', async () => {
    const dir = makeProject(CONFIG, { 'hello.ts': HELLO });
    const server = await startCli(dir);
    try {
      // The block: its first line and the indented lines under it (written at once, read once whole).
      const block = () => /svc started in [\d.]+ s.*(\n {2}.*)*/.exec(server.output())?.[0];
      const summary = await waitFor('the summary', () => (block()?.includes('trusted_proxies') ? block() : undefined), 10_000);
      expect(summary).toMatch(/1 service deployed, config config\/svc\.yaml/);
      expect(summary).toContain(`  channels   ${server.url}\n`);
      expect(summary).toMatch(/ {2}Dashboard {2}http:\/\/127\.0\.0\.1:\d+\/admin\//);
      // First start: the admin password under the Dashboard's address, in the summary and nowhere else (never a log line).
      const password = /\n {2}first start: the admin password is (\S+) \(shown once; change it with `svc admin set-password`\)\n/.exec(summary)?.[1];
      expect(password).toBeDefined();
      expect(server.output().split(password!).length - 1).toBe(1);
      // erp, crm, and the pub/sub plugin's own test definition: one line for the three.
      expect(summary).toContain('3 × security definition has a random password nobody knows; set it with `svc secdef set-password DEFINITION` or in the config file before use (definition: erp, crm, svc.pubsub.test.secdef)');
      expect(summary.match(/random password/g)).toHaveLength(1);
      expect(summary).toContain('server.trusted_proxies is not set');
      const proxyWarnings = () => server.output().split('\n').filter((l) => l.startsWith('{') && l.includes('trusted_proxies is not set')).length;
      expect(proxyWarnings()).toBe(1);

      // log_time: iso, in pino's lines and in the access line built by hand.
      const res = await request(`${server.url}/hello`);
      await res.body.dump();
      const cid = res.headers['x-svc-cid'] as string;
      const access = await waitFor('the access line', () => server.output().split('\n').find((l) => l.includes(cid) && l.includes('"msg":"request"')), 10_000);
      expect(JSON.parse(access).time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const listening = server.output().split('\n').find((l) => l.includes('"msg":"svc listening"'))!;
      expect(JSON.parse(listening).time).toMatch(/^\d{4}-\d\d-\d\dT/);

      // Saving the config applies it again: the same warning is not written again.
      const applied = () => server.output().split('\n').filter((l) => l.includes('"msg":"config applied"')).length;
      appendFileSync(join(dir, 'config', 'svc.yaml'), '# saved again\n');
      await waitFor('the config applied again', () => applied() >= 1, 15_000);
      expect(proxyWarnings()).toBe(1);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
