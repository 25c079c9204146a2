import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ImapFlow } from 'imapflow';
import { median, printGrid, rounds, startSvcCli } from '../lib.ts';

/**
 * IMAP connector (the test Dovecot, scripts/test-servers.sh: 127.0.0.1:10143, any user, password
 * svc-test). MAILS mails (a text and an HTML part, a 2 KB CSV attached) are appended to a fresh
 * user's INBOX by this process; then either a bare imapflow + mailparser loop (its own process:
 * fetch, parse, flag seen, one at a time) or svc (channel_imap → a service reading the payload →
 * flagged seen, the UID recorded in the store) takes them all. Mails/s from the reader's start
 * (selected INBOX) to the last one flagged.
 */
const HOST = process.env.BENCH_IMAP_HOST ?? '127.0.0.1';
const PORT = Number(process.env.BENCH_IMAP_PORT ?? 10143);
const PASSWORD = process.env.BENCH_IMAP_PASSWORD ?? 'svc-test';
const MAILS = Number(process.env.BENCH_IMAP_MAILS ?? 500);
const BARE = fileURLToPath(new URL('../peers/imap-bare.ts', import.meta.url));
const CSV = Buffer.from('id,item,qty\n'.concat('42,pen,2\n'.repeat(220)));

const HELLO = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`;
const READER = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ subject: ctx.payload.subject, files: ctx.payload.attachments.length }) });\n`;

function mail(i: number): string {
  const b = 'bench-boundary';
  return [
    'From: Bench <bench@svc.test>', 'To: orders@svc.test', `Subject: order ${i}`, `Message-ID: <bench-${i}@svc.test>`, 'MIME-Version: 1.0', `Content-Type: multipart/mixed; boundary="${b}"`, '',
    `--${b}`, 'Content-Type: text/plain; charset=utf-8', '', `Order ${i}, see attached.`,
    `--${b}`, 'Content-Type: text/html; charset=utf-8', '', `<p>Order <b>${i}</b></p>`,
    `--${b}`, 'Content-Type: text/csv; name="order.csv"', 'Content-Disposition: attachment; filename="order.csv"', 'Content-Transfer-Encoding: base64', '', CSV.toString('base64').replace(/.{76}/g, '$&\r\n'),
    `--${b}--`, '',
  ].join('\r\n');
}

async function client(user: string): Promise<ImapFlow> {
  const c = new ImapFlow({ host: HOST, port: PORT, secure: false, doSTARTTLS: false, auth: { user, pass: PASSWORD }, logger: false, disableAutoIdle: true });
  c.on('error', () => {});
  await c.connect();
  return c;
}

/** A fresh user whose INBOX holds MAILS unseen mails. */
async function filled(): Promise<string> {
  const user = `bench-${randomBytes(5).toString('hex')}@svc.test`;
  const c = await client(user);
  for (let i = 0; i < MAILS; i++) await c.append('INBOX', mail(i));
  await c.logout();
  return user;
}

async function untilAllSeen(user: string): Promise<number> {
  const c = await client(user);
  try {
    for (;;) {
      const st = await c.status('INBOX', { unseen: true });
      if (st && st.unseen === 0) return Date.now();
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await c.logout();
  }
}

async function bare(): Promise<number> {
  const user = await filled();
  const child = spawn(process.execPath, ['--import', 'tsx', BARE, user], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise<void>((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bare reader exited with ${code}`)))));
  const started = Number(/STARTED (\d+)/.exec(out)![1]);
  const done = Number(/DONE (\d+)/.exec(out)![1]);
  return (MAILS / (done - started)) * 1000;
}

async function svc(): Promise<number> {
  const user = await filled();
  const config = {
    server: { log_level: 'info' },
    channel_rest: [{ name: 'hello', url_path: '/hello', service: 'hello', security: 'none' }],
    channel_imap: [{ name: 'bench-in', host: HOST, port: PORT, security: 'none', username: user, password: PASSWORD, service: 'reader' }],
  };
  const running = await startSvcCli(config, { 'reader.ts': READER, 'hello.ts': HELLO }, '/hello');
  try {
    const end = await untilAllSeen(user);
    const line = readFileSync(join(running.dir, 'server.log'), 'utf8').split('\n').find((l) => l.includes('IMAP channel watching its mailbox'));
    if (!line) throw new Error('svc did not log that it watches the mailbox');
    return (MAILS / (end - (JSON.parse(line) as { time: number }).time)) * 1000;
  } finally {
    await running.stop();
  }
}

export async function run(): Promise<void> {
  const [b, s] = await rounds([bare, svc]);
  const mb = median(b!);
  const ms = median(s!);
  printGrid(
    `IMAP: ${MAILS} mails (text + HTML + 2 KB CSV attached) in INBOX, read one at a time, parsed, flagged seen (medians of ${b!.length} interleaved rounds)`,
    ['case', 'mails/s', 'vs bare', 'note'],
    [
      ['bare imapflow + mailparser loop (own process)', String(Math.round(mb)), '1.00', `rounds ${b!.map(Math.round).join(', ')}`],
      ['svc channel_imap → service → seen, UID in the store', String(Math.round(ms)), (ms / mb).toFixed(2), `rounds ${s!.map(Math.round).join(', ')}`],
    ],
  );
}
