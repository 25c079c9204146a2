import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type * as Nodemailer from 'nodemailer';
import type { Transporter } from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import { ConnectionMeter, onFirstUse, SvcError, type KernelApi } from '../../../sdk/plugin/index.ts';
import { resolvePassword } from '../shared/credentials.ts';
import type { SmtpConnectionEntry } from './schema.ts';

/** The client library, loaded by the first connection. */
const nodemailer = onFirstUse<typeof Nodemailer>(import.meta.url, 'nodemailer');

/** What a sent mail resolves to. */
export interface SentMail {
  messageId: string;
  accepted: string[];
  rejected: string[];
}

/** A ready_check verify is reused for this long when /ready asks again. */
const VERIFY_CACHE_MS = 30_000;

interface SmtpFailure {
  code?: string;
  responseCode?: number;
  response?: string;
  rejected?: unknown[];
  message?: string;
}

const addressOf = (a: unknown): string => (typeof a === 'string' ? a : typeof a === 'object' && a !== null && 'address' in a ? String((a as { address: unknown }).address) : String(a));

/**
 * What a failed send means to the caller: a 5xx answer (other than to the login) is permanent,
 * BadRequest, with the server's words and the recipients it refused; a refused login, a 4xx
 * answer, a connection or TLS failure are ServiceUnavailable (worth another attempt).
 */
export function smtpError(err: unknown, connection: string): SvcError {
  if (err instanceof SvcError) return err;
  const e = (err ?? {}) as SmtpFailure;
  const said = (e.response ?? e.message ?? String(err)).replace(/\s+/g, ' ').slice(0, 300);
  const rejected = Array.isArray(e.rejected) && e.rejected.length ? ` (rejected: ${e.rejected.map(addressOf).join(', ')})` : '';
  if (e.code === 'EAUTH') return new SvcError('SERVICE_UNAVAILABLE', `SMTP connection '${connection}': the server refused the login: ${said}`);
  if (e.responseCode !== undefined && e.responseCode >= 500) return new SvcError('BAD_REQUEST', `SMTP connection '${connection}': the server refused the mail for good: ${said}${rejected}`);
  return new SvcError('SERVICE_UNAVAILABLE', `SMTP connection '${connection}' cannot send now: ${said}${rejected}`);
}

/**
 * One smtp_connection: a nodemailer pooled transport, made at the first send (or verify) and
 * kept until the entry changes; a refused login drops it, so that the next send reads the
 * password again (a secret set meanwhile takes effect).
 */
export class SmtpConnection {
  readonly meter: ConnectionMeter;
  state: 'up' | 'down' | 'idle' = 'idle';
  reason: string | undefined;
  private transport: Promise<Transporter<SMTPPool.SentMessageInfo>> | undefined;
  private verified: { at: number; done: Promise<void> } | undefined;

  constructor(
    readonly entry: SmtpConnectionEntry,
    private readonly kernel: KernelApi,
    private readonly log: Logger,
  ) {
    this.meter = new ConnectionMeter(kernel.clock);
  }

  private transporter(): Promise<Transporter<SMTPPool.SentMessageInfo>> {
    this.transport ??= this.build().catch((err: unknown) => {
      this.transport = undefined;
      throw err;
    });
    return this.transport;
  }

  private async build(): Promise<Transporter<SMTPPool.SentMessageInfo>> {
    const e = this.entry;
    let password: string | undefined;
    let ca: Buffer | undefined;
    try {
      password = await resolvePassword(this.kernel, e);
      if (e.tls.ca_file !== undefined) ca = readFileSync(e.tls.ca_file);
    } catch (err) {
      throw new SvcError('SERVICE_UNAVAILABLE', `SMTP connection '${e.name}' is not usable: ${err instanceof Error ? err.message : String(err)}`);
    }
    const tls: Record<string, unknown> = { rejectUnauthorized: e.tls.reject_unauthorized };
    if (ca) tls.ca = ca;
    if (e.tls.server_name !== undefined) tls.servername = e.tls.server_name;
    const options: SMTPPool.Options = {
      pool: true,
      maxConnections: e.pool_size,
      host: e.host,
      port: e.port ?? (e.security === 'tls' ? 465 : 587),
      secure: e.security === 'tls',
      // STARTTLS is required, not just tried: a server (or a man in the middle) that hides it is refused.
      requireTLS: e.security === 'starttls',
      ignoreTLS: e.security === 'none',
      connectionTimeout: e.connect_timeout_ms,
      greetingTimeout: e.greeting_timeout_ms,
      socketTimeout: e.socket_timeout_ms,
      tls,
      disableFileAccess: true,
      disableUrlAccess: true,
      logger: false,
    };
    if (e.username !== undefined) options.auth = password === undefined ? { user: e.username } : { user: e.username, pass: password };
    const transport = nodemailer().createTransport(options);
    transport.on('error', (err: Error) => this.log.warn({ connection: e.name, err: err.message }, 'SMTP: pooled connection failed'));
    return transport;
  }

  /** Sends now; resolves with what the server accepted, or throws the mapped error. */
  async send(message: Mail.Options): Promise<SentMail> {
    const started = this.meter.start();
    try {
      const transport = await this.transporter();
      const info = await transport.sendMail(message);
      this.meter.done('send', 'ok', started);
      this.markUp();
      return { messageId: String(info.messageId ?? ''), accepted: (info.accepted ?? []).map(addressOf), rejected: (info.rejected ?? []).map(addressOf) };
    } catch (err) {
      this.meter.done('send', 'error', started);
      throw this.failed(err);
    }
  }

  /** Connects, STARTTLS, logs in (nodemailer's verify); cached for VERIFY_CACHE_MS. */
  verify(): Promise<void> {
    const now = this.kernel.clock.now();
    if (this.verified && now - this.verified.at < VERIFY_CACHE_MS) return this.verified.done;
    const done = (async () => {
      try {
        await (await this.transporter()).verify();
        this.markUp();
      } catch (err) {
        throw this.failed(err);
      }
    })();
    done.catch(() => {});
    this.verified = { at: now, done };
    return done;
  }

  private markUp(): void {
    this.state = 'up';
    this.reason = undefined;
  }

  /**
   * The server's answer to one mail (a recipient refused, 4xx or 5xx) says nothing about the
   * connection; a refused login, a connection, TLS or protocol failure marks it down.
   */
  private failed(err: unknown): SvcError {
    const mapped = smtpError(err, this.entry.name);
    const e = err as SmtpFailure | undefined;
    if (mapped.code === 'SERVICE_UNAVAILABLE' && (e?.responseCode === undefined || e.code === 'EAUTH')) {
      this.state = 'down';
      this.reason = mapped.details.slice(0, 300);
    }
    if ((err as SmtpFailure | undefined)?.code === 'EAUTH') void this.close();
    return mapped;
  }

  async close(): Promise<void> {
    const transport = this.transport;
    this.transport = undefined;
    this.verified = undefined;
    if (transport) (await transport.catch(() => undefined))?.close();
  }
}
