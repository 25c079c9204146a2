import { toBase64 } from './internal/bytes.ts';
import { callHost } from './internal/runtime.ts';

/** A file sent with a mail. */
export interface MailAttachment {
  filename: string;
  /** Bytes, or text: as UTF-8 (encoding 'utf8', the default) or already base64 (encoding 'base64'). */
  content: string | Uint8Array;
  encoding?: 'base64' | 'utf8';
  /** Default: guessed from the filename's extension. */
  contentType?: string;
}

/** Addresses are `a@example.com` or `Name <a@example.com>`. */
export interface MailMessage {
  /** Default: the connection's `from`. */
  from?: string;
  to: string | string[];
  cc?: string | string[];
  bcc?: string | string[];
  /** Default: the connection's `reply_to`, if any. */
  replyTo?: string;
  subject: string;
  text?: string;
  html?: string;
  /** Extra headers (X-…); not From, To, Subject and the others the fields above set. */
  headers?: Record<string, string>;
  attachments?: MailAttachment[];
}

export interface MailSendOptions {
  /**
   * Store the mail in the Use queue and send it from there, retried with backoff while the mail
   * server is down; default: the connection's `queue_by_default`.
   */
  queue?: boolean;
}

/** A mail sent now: what the server accepted and refused (a partly refused mail was sent to the rest). */
export interface MailSent {
  messageId: string;
  accepted: string[];
  rejected: string[];
}

/** A mail stored in the Use queue: sent later, with retries; dead letters in `svc queue list --channel smtp:<name>`. */
export interface MailQueued {
  queued: true;
  /** The queued event's correlation ID (logs, `svc queue`). */
  cid: string;
}

/**
 * An SMTP connection of the server's config (`smtp_connection:`), by name. The config lists which
 * services may send on it; services never see its address or credentials.
 */
export interface MailConnection {
  readonly name: string;
  /**
   * Sends `message`, resolving with what the server accepted, or, with `{ queue: true }`, once it
   * is stored in the Use queue. Errors: NotFound (no such connection), Forbidden (not allowed to
   * this service), BadRequest (an address, header or attachment refused; the server refused the
   * mail for good with a 5xx answer: the message says which recipients), status 413 (larger than
   * the connection's max_message_bytes), ServiceUnavailable (server down, a 4xx answer, login
   * refused, queue full: worth another try, or use `{ queue: true }`).
   */
  send(message: MailMessage, options?: MailSendOptions): Promise<MailSent | MailQueued>;
}

function wireAttachment(a: MailAttachment, i: number): Record<string, unknown> {
  if (a === null || typeof a !== 'object') throw new TypeError(`mail.send: attachments[${i}] must be an object`);
  const out: Record<string, unknown> = { filename: a.filename };
  if (a.content instanceof Uint8Array) Object.assign(out, { content: toBase64(a.content), encoding: 'base64' });
  else if (typeof a.content === 'string') Object.assign(out, { content: a.content, encoding: a.encoding ?? 'utf8' });
  else throw new TypeError(`mail.send: attachments[${i}].content must be a string or a Uint8Array`);
  if (a.contentType !== undefined) out.contentType = a.contentType;
  return out;
}

/** The SMTP connection `name` of the config: `mail('notify').send({ to, subject, text })`. */
export function mail(name: string): MailConnection {
  if (typeof name !== 'string' || name === '') throw new TypeError('mail: name must be a non-empty string');
  return {
    name,
    async send(message, options) {
      if (message === null || typeof message !== 'object') throw new TypeError('mail.send: message must be an object');
      const wire: Record<string, unknown> = { ...message };
      if (message.attachments !== undefined) {
        if (!Array.isArray(message.attachments)) throw new TypeError('mail.send: attachments must be an array');
        wire.attachments = message.attachments.map(wireAttachment);
      }
      return (await callHost('mail.send', { connection: name, message: wire, options: options ?? {} })) as MailSent | MailQueued;
    },
  };
}
