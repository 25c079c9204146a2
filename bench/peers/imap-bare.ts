/**
 * What a team would write without svc, in its own process, for the IMAP bench (bench/suites/imap.ts):
 *   imap-bare.ts USER   connects to the test Dovecot as USER, prints `STARTED <epoch ms>` once INBOX
 *                       is selected, then takes every unseen message in UID order: FETCH its size and
 *                       source, parse it with mailparser, flag it \Seen; exits when none is left.
 */
import { ImapFlow } from 'imapflow';
import { simpleParser } from 'mailparser';

const user = process.argv[2]!;
const client = new ImapFlow({ host: process.env.BENCH_IMAP_HOST ?? '127.0.0.1', port: Number(process.env.BENCH_IMAP_PORT ?? 10143), secure: false, doSTARTTLS: false, auth: { user, pass: process.env.BENCH_IMAP_PASSWORD ?? 'svc-test' }, logger: false, disableAutoIdle: true });
await client.connect();
await client.mailboxOpen('INBOX');
console.log(`STARTED ${Date.now()}`);
const uids = ((await client.search({ seen: false }, { uid: true })) || []).sort((a, b) => a - b);
for (const uid of uids) {
  const m = await client.fetchOne(String(uid), { size: true, source: true }, { uid: true });
  if (!m || !m.source) continue;
  const mail = await simpleParser(m.source, { skipImageLinks: true, skipTextToHtml: true });
  if (!mail.subject) throw new Error(`message ${uid} has no subject`);
  await client.messageFlagsAdd(String(uid), ['\\Seen'], { uid: true });
}
await client.logout();
console.log(`DONE ${Date.now()}`);
