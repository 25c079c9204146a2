import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ImapFlow } from 'imapflow';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { expect } from 'vitest';
import { IMAP, SERVERS_DIR } from '../../../helpers/servers.ts';

export const TLS_CERT = join(SERVERS_DIR, 'tls.crt');

/** A service that sends what it is given (connection, message, options) and answers the result, or the error it met. */
export const SENDER = `import { service, mail } from 'svc/sdk';
export default service({
  limits: { memoryMb: 400 },
  async handle(ctx) {
    const { connection, message, options, bytes } = ctx.payload;
    if (bytes) message.attachments = [...(message.attachments ?? []), { filename: 'blob.bin', content: new Uint8Array(bytes).fill(7) }];
    try {
      return { result: await mail(connection).send(message, options) };
    } catch (e) {
      return { error: e.name, status: e.status, message: e.message };
    }
  },
});
`;

/** Reads `user`'s INBOX over IMAP until it holds `count` mails (the relay delivers a moment after it accepted). */
export async function inbox(user: string, count = 1, timeoutMs = 15_000): Promise<ParsedMail[]> {
  let mails: ParsedMail[] = [];
  await expect
    .poll(
      async () => {
        const client = new ImapFlow({ host: IMAP.host, port: IMAP.port, secure: false, auth: { user, pass: IMAP.password }, logger: false, tls: { rejectUnauthorized: false } });
        await client.connect();
        try {
          const lock = await client.getMailboxLock('INBOX');
          try {
            mails = [];
            for await (const m of client.fetch('1:*', { source: true })) if (m.source) mails.push(await simpleParser(m.source));
          } catch {
            mails = [];
          } finally {
            lock.release();
          }
        } finally {
          await client.logout().catch(() => {});
        }
        return mails.length;
      },
      { timeout: timeoutMs, interval: 200 },
    )
    .toBeGreaterThanOrEqual(count);
  return mails;
}

/**
 * A second SMTP server of the test's own, on its own port, that it stops and starts (a mail
 * server outage): it keeps what it accepted in memory.
 */
export class Sink {
  readonly received: Array<{ from: string; to: string[]; raw: string }> = [];
  private server: SMTPServer | undefined;
  /** Answer the next RCPT TO with this code (451, 550), when set. */
  refuseWith: number | undefined;

  constructor(public port = 0) {}

  async start(): Promise<this> {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      closeTimeout: 200,
      logger: false,
      onRcptTo: (_address, _session, callback) => {
        if (this.refuseWith) return callback(Object.assign(new Error(`Refused with ${this.refuseWith}`), { responseCode: this.refuseWith }));
        callback();
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          this.received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString('utf8') });
          callback();
        });
      },
    });
    server.on('error', () => {});
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.server.address() as { port: number }).port;
    this.server = server;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

export const certificate = () => readFileSync(TLS_CERT, 'utf8');
