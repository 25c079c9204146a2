import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAP, SERVERS_DIR, testServers } from '../../../helpers/servers.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { startObserved, type ObservedKernel } from '../../observe/support.ts';
import { channel, mail, Mailbox, Recorder, REPORTER } from './support.ts';

/** channel_imap with `security: starttls` against Dovecot, whose certificate is self-signed (the test CA). */
const CA = join(SERVERS_DIR, 'tls.crt');
const rec = new Recorder<{ channel: string; subject: string }>();
const trusted = new Mailbox('tls-ok');
const untrusted = new Mailbox('tls-refused');
let k: ObservedKernel;

beforeAll(async () => {
  await testServers();
  await rec.start();
  await trusted.open();
  await untrusted.open();
  k = await startObserved({
    config: `
outgoing_rest:
  - ${rec.outgoing()}
channel_imap:
  - ${channel(trusted.user, { name: 'tls-ok', security: 'starttls', tls: { ca_file: CA }, password: '${IMAP_PASSWORD}' })}
  - ${channel(untrusted.user, { name: 'tls-refused', security: 'starttls', password: '${IMAP_PASSWORD}', ready_check: true })}
`,
    services: { 'reporter.ts': REPORTER },
    env: { IMAP_PASSWORD: IMAP.password },
  });
}, 60_000);

afterAll(async () => {
  await k?.close();
  await trusted.close();
  await untrusted.close();
  await rec.close();
});

async function ready(): Promise<{ http: number; text: string; connections: Array<{ name: string; state: string; reason?: string }> }> {
  const r = await fetch(`${k.admin}/ready`);
  const text = await r.text();
  return { http: r.status, text, ...(JSON.parse(text) as { connections: Array<{ name: string; state: string; reason?: string }> }) };
}

/** The password as a word of its own (temp paths hold `svc-test-…`). */
const PASSWORD_WORD = new RegExp(`(?<![\\w-])${IMAP.password}(?![\\w-])`);

describe('channel_imap over STARTTLS', () => {
  it('with tls.ca_file the self-signed certificate verifies: the channel is up and runs a mail', async () => {
    await waitFor('tls-ok up', async () => (await ready()).connections.find((c) => c.name === 'tls-ok')?.state === 'up');
    await trusted.append(mail({ subject: 'over-tls' }));
    await waitFor('the mail to run', () => rec.got.some((r) => r.channel === 'tls-ok' && r.subject === 'over-tls'));
    expect(rec.got.filter((r) => r.channel === 'tls-ok')).toHaveLength(1);
  });

  it('without the CA the certificate is refused: /ready names the reason, ready_check makes it 503, and the mail is not read', async () => {
    const uid = await untrusted.append(mail({ subject: 'never-read' }));
    const r = await waitFor('tls-refused down', async () => {
      const now = await ready();
      return now.connections.find((c) => c.name === 'tls-refused')?.state === 'down' && now;
    });
    expect(r.http).toBe(503);
    expect(r.connections.find((c) => c.name === 'tls-refused')?.reason).toBe('TLS failed: server certificate not trusted (self-signed; set tls.ca_file)');
    expect(r.text).not.toMatch(PASSWORD_WORD);
    const lines = k.logs.map((l) => JSON.stringify(l)).filter((l) => l.includes('tls-refused'));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).not.toMatch(PASSWORD_WORD);
    expect(rec.got.filter((x) => x.channel === 'tls-refused')).toEqual([]);
    expect(await untrusted.list()).toEqual([{ uid, seen: false, subject: 'never-read' }]);
  });
});
