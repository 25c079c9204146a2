import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ImapFlow } from 'imapflow';
import { IMAP, SERVERS_DIR, uniqueMailUser } from '../../../helpers/servers.ts';

/** A bare imapflow client on a fresh mailbox user: the test's own view of the server. */
export class Mailbox {
  readonly user: string;
  private client!: ImapFlow;

  constructor(prefix = 'imap') {
    this.user = uniqueMailUser(prefix);
  }

  async open(): Promise<this> {
    this.client = new ImapFlow({ host: IMAP.host, port: IMAP.port, secure: false, doSTARTTLS: false, auth: { user: this.user, pass: IMAP.password }, logger: false, disableAutoIdle: true });
    this.client.on('error', () => {});
    await this.client.connect();
    return this;
  }

  /** Appends a message to `folder` (INBOX by default); `flags` e.g. ['\\Seen']. Resolves with its UID. */
  async append(raw: string | Buffer, folder = 'INBOX', flags: string[] = []): Promise<number> {
    const r = await this.client.append(folder, raw, flags);
    if (!r || r.uid === undefined) throw new Error('append failed');
    return r.uid;
  }

  /** Messages of a folder: uid, flags, subject. */
  async list(folder = 'INBOX'): Promise<Array<{ uid: number; seen: boolean; subject: string }>> {
    const exists = (await this.client.list()).some((m) => m.path === folder);
    if (!exists) return [];
    const lock = await this.client.getMailboxLock(folder);
    try {
      // A mailbox selected already is not selected again: NOOP brings its news (EXISTS).
      await this.client.noop();
      if ((this.client.mailbox || { exists: 0 }).exists === 0) return [];
      const all = await this.client.fetchAll('1:*', { uid: true, flags: true, envelope: true }, { uid: false });
      // A flag the channel sets meanwhile (on its own session) reaches this one as an unsolicited
      // FETCH of flags alone, which imapflow hands over among the results: one entry per message
      // (by sequence number), its UID and subject from the answer that has them.
      const bySeq = new Map<number, { uid: number; seen: boolean; subject: string }>();
      for (const m of all) {
        const seen = m.flags?.has('\\Seen') ?? false;
        const known = bySeq.get(m.seq);
        bySeq.set(m.seq, { uid: known?.uid || m.uid, seen: (known?.seen ?? false) || seen, subject: known?.subject || (m.envelope?.subject ?? '') });
      }
      return [...bySeq.values()].sort((a, b) => a.uid - b.uid);
    } finally {
      lock.release();
    }
  }

  /** A new connection (after `kick`, which drops the test's own sessions too). */
  async reopen(): Promise<void> {
    this.client.close();
    await this.open();
  }

  async create(folder: string): Promise<void> {
    await this.client.mailboxCreate(folder);
  }

  async remove(folder: string): Promise<void> {
    await this.client.mailboxDelete(folder);
  }

  async close(): Promise<void> {
    await this.client.logout().catch(() => this.client.close());
  }
}

/** A plain mail (CRLF line ends, as on the wire). */
export function mail(opts: { subject: string; from?: string; to?: string; text?: string; extraHeaders?: string[] }): string {
  const lines = [`From: ${opts.from ?? 'Alice <alice@svc.test>'}`, `To: ${opts.to ?? 'orders@svc.test'}`, `Subject: ${opts.subject}`, `Message-ID: <${opts.subject.replace(/\W/g, '-')}-${Date.now()}@svc.test>`, 'Date: Tue, 14 Nov 2023 22:13:20 +0000', ...(opts.extraHeaders ?? []), 'Content-Type: text/plain; charset=utf-8', '', opts.text ?? `body of ${opts.subject}`, ''];
  return lines.join('\r\n');
}

/** A mail with a text and an HTML part and one attachment. */
export function multipartMail(subject: string, attachment: Buffer, filename = 'order.csv'): string {
  const b = 'b-outer-123';
  const a = 'b-alt-456';
  return [
    'From: "Bob Sender" <bob@svc.test>',
    'To: orders@svc.test, "Carol" <carol@svc.test>',
    'Cc: audit@svc.test',
    'Reply-To: replies@svc.test',
    `Subject: ${subject}`,
    `Message-ID: <${subject}@svc.test>`,
    'Date: Tue, 14 Nov 2023 22:13:20 +0000',
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${b}"`,
    '',
    `--${b}`,
    `Content-Type: multipart/alternative; boundary="${a}"`,
    '',
    `--${a}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Order 42 attached.',
    `--${a}`,
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>Order <b>42</b> attached.</p>',
    `--${a}--`,
    `--${b}`,
    `Content-Type: text/csv; name="${filename}"`,
    `Content-Disposition: attachment; filename="${filename}"`,
    'Content-Transfer-Encoding: base64',
    '',
    attachment.toString('base64').replace(/.{76}/g, '$&\r\n'),
    `--${b}--`,
    '',
  ].join('\r\n');
}

/** Disconnects every IMAP session of the user (Dovecot's `doveadm kick`): the server dropping the connection. */
export function kick(user: string): void {
  execFileSync('doveadm', ['-c', join(SERVERS_DIR, 'dovecot.conf'), 'kick', user], { stdio: 'pipe' });
}

/** A loopback HTTP server services report to (outgoing `rec`): it records every JSON body and answers 200. */
export class Recorder<T = Record<string, unknown>> {
  readonly got: T[] = [];
  /** While set, answers wait for it: the reporting service is in flight until the test lets it go. */
  gate: Promise<void> | undefined;
  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.got.push(JSON.parse(Buffer.concat(chunks).toString()) as T);
      void (this.gate ?? Promise.resolve()).then(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
  });

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  outgoing(name = 'rec'): string {
    return `{ name: ${name}, address: 'http://127.0.0.1:${(this.server.address() as AddressInfo).port}', url_path: /rec, timeout_ms: 10000, retry: { max_attempts: 1 } }`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Reports the mail (without attachment bytes) to the recorder, then fails when the subject says so. */
export const REPORTER = `import { service, outgoing, BadRequest } from 'svc/sdk';
export default service({
  async handle(ctx) {
    const p = ctx.payload;
    await outgoing('rec').post(ctx.cid, { payload: {
      channel: ctx.delivery?.source?.name, attempt: ctx.delivery?.attempt, uid: p.uid, subject: p.subject, from: p.from, to: p.to, cc: p.cc, replyTo: p.replyTo,
      messageId: p.messageId, date: p.date, text: p.text, html: p.html, headers: ctx.headers, inputSubject: ctx.input.subject,
      attachments: p.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, size: a.size, content: a.content })),
    } });
    if (String(p.subject).startsWith('fail')) throw new Error('refused: ' + p.subject);
    if (String(p.subject).startsWith('bad')) throw new BadRequest('not an order');
    return { ok: true };
  },
});
`;

/** A channel_imap entry (JSON, which YAML reads) on the user's mailbox, quick to retry and reconnect; `over` replaces keys. */
export function channel(user: string, over: Record<string, unknown>): string {
  const base = {
    host: IMAP.host,
    port: IMAP.port,
    security: 'none',
    username: user,
    password: IMAP.password,
    service: 'reporter',
    poll_interval_ms: 2000,
    reconnect: { min_ms: 100, max_ms: 500 },
    delivery: { max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20 },
  };
  return JSON.stringify({ ...base, ...over });
}
