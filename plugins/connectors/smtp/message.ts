import type Mail from 'nodemailer/lib/mailer';
import { z } from 'zod';
import { SvcError } from '../../../sdk/plugin/index.ts';
import type { SmtpConnectionEntry } from './schema.ts';

/**
 * A mail as a service hands it over, checked on the host. The zod schema holds the shape only;
 * what a service can get wrong in content (an address, a line break in a header, a size) is
 * checked by `checkMail`, which answers BadRequest / PayloadTooLarge with what is wrong.
 */
const addresses = z.union([z.string(), z.array(z.string()).max(10_000)]);

const attachmentSchema = z
  .object({
    filename: z.string(),
    /** Text as it is (encoding utf8), or bytes as base64 (the SDK sends a Uint8Array so). */
    content: z.string(),
    encoding: z.enum(['base64', 'utf8']).default('utf8'),
    contentType: z.string().optional(),
  })
  .strict();

export const mailMessageSchema = z
  .object({
    from: z.string().optional(),
    to: addresses,
    cc: addresses.optional(),
    bcc: addresses.optional(),
    replyTo: z.string().optional(),
    subject: z.string(),
    text: z.string().optional(),
    html: z.string().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    attachments: z.array(attachmentSchema).max(1000).optional(),
  })
  .strict();

export type MailMessage = z.infer<typeof mailMessageSchema>;

export const sendArgs = z
  .object({
    connection: z.string().min(1).max(200),
    message: mailMessageSchema,
    options: z.object({ queue: z.boolean().optional() }).strict().default({}),
  })
  .strict();

export type SendArgs = z.infer<typeof sendArgs>;

const MAX_ATTACHMENTS = 100;
const MAX_HEADERS = 50;
const MAX_SUBJECT = 998;
/** Headers the message's own fields set: given as headers they could contradict them. */
const RESERVED_HEADERS = new Set(['from', 'to', 'cc', 'bcc', 'reply-to', 'subject', 'sender', 'date', 'message-id', 'mime-version', 'content-type', 'content-transfer-encoding']);

// A practical check, not RFC 5322 in full: one local part, one domain with a dot or a bracketed literal.
const BARE_ADDRESS = /^[^\s@<>()[\]\\,;:"]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+|\[[0-9A-Fa-f:.]+\])$/;
const NAMED_ADDRESS = /^([^<>]*)<([^<>]+)>$/;
const LINE_BREAK = /[\r\n\0]/;
const HEADER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,75}$/;
const CONTENT_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(?:\s*;\s*[A-Za-z0-9!#$&^_.+-]+=(?:[A-Za-z0-9!#$&^_.+-]+|"[^"\\]*"))*$/;
const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

function bad(message: string): SvcError {
  return new SvcError('BAD_REQUEST', message);
}

/** `a@b.c` or `Name <a@b.c>`; returns the bare address. */
function checkAddress(field: string, value: string): string {
  if (LINE_BREAK.test(value)) throw bad(`${field}: an address may not hold a line break`);
  const named = NAMED_ADDRESS.exec(value.trim());
  const bare = (named ? named[2]! : value).trim();
  if (value.length > 998 || !BARE_ADDRESS.test(bare)) throw bad(`${field}: '${value.slice(0, 100)}' is not a mail address (a@example.com or "Name <a@example.com>")`);
  return bare;
}

function addressList(field: string, value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  const list = typeof value === 'string' ? [value] : value;
  list.forEach((a, i) => checkAddress(typeof value === 'string' ? field : `${field}[${i}]`, a));
  return list;
}

function noLineBreak(field: string, value: string, max: number): void {
  if (LINE_BREAK.test(value)) throw bad(`${field} may not hold a line break (header injection)`);
  if (value.length > max) throw bad(`${field} is longer than ${max} characters`);
}

/** Bytes of `n` bytes as base64 on the wire: 4 per 3, and CRLF after every 76 characters. */
function base64Bytes(n: number): number {
  const chars = Math.ceil(n / 3) * 4;
  return chars + Math.ceil(chars / 76) * 2;
}

function decodedBytes(a: MailMessage['attachments'] extends Array<infer A> | undefined ? A : never): number {
  if (a.encoding === 'utf8') return Buffer.byteLength(a.content, 'utf8');
  const padding = a.content.endsWith('==') ? 2 : a.content.endsWith('=') ? 1 : 0;
  return Math.floor((a.content.length * 3) / 4) - padding;
}

/**
 * The size a mail takes on the wire, at most: every body part and attachment counted as base64
 * (what attachments are sent as; text as quoted-printable is never larger, short of pathological
 * text), the headers as given, and room for the MIME structure.
 */
export function encodedSize(m: MailMessage): number {
  let size = 2048 + m.subject.length * 3;
  for (const part of [m.text, m.html]) if (part !== undefined) size += base64Bytes(Buffer.byteLength(part, 'utf8'));
  for (const [k, v] of Object.entries(m.headers ?? {})) size += k.length + v.length + 4;
  for (const a of m.attachments ?? []) size += 300 + a.filename.length * 3 + base64Bytes(decodedBytes(a));
  return size;
}

/** Checks a mail against the connection's limits; throws BadRequest or PayloadTooLarge, saying what. Nothing is sent before it passed. */
export function checkMail(m: MailMessage, entry: SmtpConnectionEntry): void {
  // Size first: a 50 MB mail is refused before its content is looked at further.
  const size = encodedSize(m);
  if (size > entry.max_message_bytes) {
    throw new SvcError('PAYLOAD_TOO_LARGE', `mail too large: about ${size} bytes encoded is larger than the ${entry.max_message_bytes} bytes SMTP connection '${entry.name}' sends (max_message_bytes)`);
  }
  const recipients = addressList('to', m.to).length + addressList('cc', m.cc).length + addressList('bcc', m.bcc).length;
  if (recipients === 0) throw bad('to: a mail needs a recipient');
  if (recipients > entry.max_recipients) throw bad(`${recipients} recipients are more than the ${entry.max_recipients} SMTP connection '${entry.name}' allows (max_recipients)`);
  if (m.from !== undefined) checkAddress('from', m.from);
  if (m.replyTo !== undefined) checkAddress('replyTo', m.replyTo);
  noLineBreak('subject', m.subject, MAX_SUBJECT);
  if (m.text === undefined && m.html === undefined && !m.attachments?.length) throw bad('a mail needs text, html or an attachment');
  const headers = Object.entries(m.headers ?? {});
  if (headers.length > MAX_HEADERS) throw bad(`at most ${MAX_HEADERS} headers`);
  for (const [name, value] of headers) {
    if (!HEADER_NAME.test(name)) throw bad(`header name '${name.slice(0, 80)}' is not a header name (letters, digits and -)`);
    if (RESERVED_HEADERS.has(name.toLowerCase())) throw bad(`header '${name}' is set from the message's own fields, not headers`);
    noLineBreak(`header '${name}'`, value, 998);
  }
  const attachments = m.attachments ?? [];
  if (attachments.length > MAX_ATTACHMENTS) throw bad(`at most ${MAX_ATTACHMENTS} attachments`);
  attachments.forEach((a, i) => {
    if (a.filename === '') throw bad(`attachments[${i}].filename is empty`);
    noLineBreak(`attachments[${i}].filename`, a.filename, 255);
    if (a.contentType !== undefined && !CONTENT_TYPE.test(a.contentType)) throw bad(`attachments[${i}].contentType '${a.contentType.slice(0, 100)}' is not a media type (type/subtype)`);
    if (a.encoding === 'base64' && !BASE64.test(a.content)) throw bad(`attachments[${i}].content is not base64`);
  });
}

/** What nodemailer sends: the connection's defaults where the mail gives none; no file or URL is ever read. */
export function nodemailerMessage(m: MailMessage, entry: SmtpConnectionEntry): Mail.Options {
  const out: Mail.Options = { from: m.from ?? entry.from, to: m.to, subject: m.subject, disableFileAccess: true, disableUrlAccess: true };
  if (m.cc !== undefined) out.cc = m.cc;
  if (m.bcc !== undefined) out.bcc = m.bcc;
  const replyTo = m.replyTo ?? entry.reply_to;
  if (replyTo !== undefined) out.replyTo = replyTo;
  if (m.text !== undefined) out.text = m.text;
  if (m.html !== undefined) out.html = m.html;
  if (m.headers !== undefined) out.headers = m.headers;
  if (m.attachments?.length) {
    out.attachments = m.attachments.map((a) => {
      const att: Mail.Attachment = { filename: a.filename, content: Buffer.from(a.content, a.encoding === 'base64' ? 'base64' : 'utf8') };
      if (a.contentType !== undefined) att.contentType = a.contentType;
      return att;
    });
  }
  return out;
}
