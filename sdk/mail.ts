import { PayloadTooLarge } from './errors.ts';
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
   * this service), BadRequest (an address, header or attachment refused; the server refused the mail for good with a
   * 5xx answer: the message says which recipients), PayloadTooLarge (larger than the
   * connection's max_message_bytes: 'mail too large'), ServiceUnavailable (server down, a 4xx answer, login
   * refused, queue full: worth another try, or use `{ queue: true }`).
   */
  send(message: MailMessage, options?: MailSendOptions): Promise<MailSent | MailQueued>;
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64_CODES = Uint8Array.from(B64, (c) => c.charCodeAt(0));

/**
 * Base64 of bytes of any size (an attachment of megabytes): written as character codes into a
 * byte array and turned into text a slice at a time, since appending to a string per character
 * takes an isolate seconds and far more memory for a few megabytes.
 */
function base64Of(bytes: Uint8Array): string {
  if (bytes.length < 3 * 1024) return toBase64(bytes);
  const whole = bytes.length - (bytes.length % 3);
  const codes = new Uint8Array((whole / 3) * 4);
  for (let i = 0, o = 0; i < whole; i += 3, o += 4) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    codes[o] = B64_CODES[n >> 18]!;
    codes[o + 1] = B64_CODES[(n >> 12) & 63]!;
    codes[o + 2] = B64_CODES[(n >> 6) & 63]!;
    codes[o + 3] = B64_CODES[n & 63]!;
  }
  const parts: string[] = [];
  for (let i = 0; i < codes.length; i += 8192) parts.push(String.fromCharCode.apply(null, codes.subarray(i, i + 8192) as unknown as number[]));
  return parts.join('') + toBase64(bytes.subarray(whole));
}

function wireAttachment(a: MailAttachment, i: number): Record<string, unknown> {
  if (a === null || typeof a !== 'object') throw new TypeError(`mail.send: attachments[${i}] must be an object`);
  const out: Record<string, unknown> = { filename: a.filename };
  if (a.content instanceof Uint8Array) Object.assign(out, { content: base64Of(a.content), encoding: 'base64' });
  else if (typeof a.content === 'string') Object.assign(out, { content: a.content, encoding: a.encoding ?? 'utf8' });
  else throw new TypeError(`mail.send: attachments[${i}].content must be a string or a Uint8Array`);
  if (a.contentType !== undefined) out.contentType = a.contentType;
  return out;
}

/**
 * Most characters a mail's content may take crossing to the host. The sandbox process's line to
 * the kernel has a hard limit (about 2 × server.sandbox.max_output_bytes + 8 MiB, 40 MiB by
 * default) that a larger host call would break; the connection's max_message_bytes (at most
 * 30 MiB) is checked on the host within this.
 */
const MAX_CROSSING_CHARS = 31 * 1024 * 1024;

function crossingChars(message: MailMessage): number {
  let n = (message.text?.length ?? 0) + (message.html?.length ?? 0);
  for (const a of message.attachments ?? []) n += a?.content instanceof Uint8Array ? Math.ceil(a.content.length / 3) * 4 : typeof a?.content === 'string' ? a.content.length : 0;
  return n;
}

/** The SMTP connection `name` of the config: `mail('notify').send({ to, subject, text })`. */
export function mail(name: string): MailConnection {
  if (typeof name !== 'string' || name === '') throw new TypeError('mail: name must be a non-empty string');
  return {
    name,
    async send(message, options) {
      if (message === null || typeof message !== 'object') throw new TypeError('mail.send: message must be an object');
      const size = crossingChars(message);
      if (size > MAX_CROSSING_CHARS) throw new PayloadTooLarge(`mail too large: about ${size} characters encoded is larger than the ${MAX_CROSSING_CHARS} a service may send (see the connection's max_message_bytes)`);
      const wire: Record<string, unknown> = { ...message };
      if (message.attachments !== undefined) {
        if (!Array.isArray(message.attachments)) throw new TypeError('mail.send: attachments must be an array');
        wire.attachments = message.attachments.map(wireAttachment);
      }
      return (await callHost('mail.send', { connection: name, message: wire, options: options ?? {} })) as MailSent | MailQueued;
    },
  };
}
