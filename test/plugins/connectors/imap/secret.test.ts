import { afterAll, beforeAll, expect, it } from 'vitest';
import { IMAP, testServers } from '../../../helpers/servers.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { startObserved, type ObservedKernel } from '../../observe/support.ts';
import { channel, mail, Mailbox, Recorder, REPORTER } from './support.ts';

/**
 * A password kept as a named secret whose value the config holds: connectors set up before the
 * secrets plugin connect while the first config applies, and must get that value at once, not
 * "no value yet" and a reconnect after backoff.
 */
const rec = new Recorder<{ channel: string; subject: string }>();
const box = new Mailbox('secret');
let k: ObservedKernel;

beforeAll(async () => {
  await testServers();
  await rec.start();
  await box.open();
  k = await startObserved({
    config: `
secrets:
  - { name: imap-password, value: '\${IMAP_PASSWORD}' }
outgoing_rest:
  - ${rec.outgoing()}
channel_imap:
  - ${channel(box.user, { name: 'by-secret', password: undefined, password_secret: 'imap-password', reconnect: { min_ms: 5000, max_ms: 5000 } })}
`,
    services: { 'reporter.ts': REPORTER },
    env: { IMAP_PASSWORD: IMAP.password },
  });
}, 60_000);

afterAll(async () => {
  await k?.close();
  await box.close();
  await rec.close();
});

it('a channel whose password is a named secret of the config connects at the first try', async () => {
  await box.append(mail({ subject: 'first-try' }));
  // Within the 5 s reconnect wait: only a first connection that worked can have run it.
  await waitFor('the mail to run', () => rec.got.some((r) => r.subject === 'first-try'), 4000);
  expect(k.logs.filter((l) => String(l.err ?? '').includes('has no value yet'))).toEqual([]);
});
