import type * as MailParser from 'mailparser';
import type { AddressObject, HeaderLines, ParsedMail } from 'mailparser';
import { onFirstUse } from '../../../sdk/plugin/index.ts';

/** The parser, loaded by the first mail read. */
const mailParser = onFirstUse<typeof MailParser>(import.meta.url, 'mailparser');

/** An address as services read it. */
export interface MailAddress {
  name: string;
  address: string;
}

export interface MailAttachment {
  filename: string | null;
  contentType: string;
  size: number;
  /** The decoded bytes, base64. */
  content: string;
  contentId: string | null;
  inline: boolean;
}

/** A parsed mail: the service's ctx.payload (and, its fields, ctx.input). */
export interface MailPayload {
  uid: number;
  mailbox: string;
  messageId: string | null;
  from: MailAddress | null;
  to: MailAddress[];
  cc: MailAddress[];
  replyTo: MailAddress[];
  subject: string | null;
  /** ISO 8601, from the Date header. */
  date: string | null;
  inReplyTo: string | null;
  /** Every header, names lower-case; a header given several times keeps the values in order. */
  headers: Record<string, string | string[]>;
  text: string | null;
  html: string | null;
  attachments: MailAttachment[];
  /** Size on the server, bytes. */
  size: number;
}

/** Why a mail is not handed to its service: dead-lettered with this (kind, message). */
export interface MailRefusal {
  kind: 'MessageTooLarge' | 'MalformedMessage' | 'AttachmentTooLarge';
  message: string;
}

export type ParseResult = { ok: true; payload: MailPayload } | { ok: false; refusal: MailRefusal; payload: MailPayload };

/** The headers ctx.headers gets (lower-case), beside `imap-uid` and `imap-mailbox`. */
const MAIN_HEADERS = ['message-id', 'from', 'to', 'cc', 'reply-to', 'subject', 'date', 'in-reply-to', 'references', 'content-type', 'list-id', 'x-priority'] as const;

function addresses(field: AddressObject | AddressObject[] | undefined): MailAddress[] {
  const out: MailAddress[] = [];
  for (const group of Array.isArray(field) ? field : field ? [field] : []) {
    for (const a of group.value) {
      // A group (`team: a@x, b@x;`) lists its members.
      for (const member of a.group ?? [a]) if (member.address) out.push({ name: member.name ?? '', address: member.address });
    }
  }
  return out;
}

function headerRecord(lines: HeaderLines): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const { key, line } of lines) {
    const colon = line.indexOf(':');
    const value = (colon < 0 ? '' : line.slice(colon + 1)).replace(/\r?\n[ \t]+/g, ' ').trim();
    const had = out[key];
    out[key] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  }
  return out;
}

function validDate(d: Date | undefined): string | null {
  return d && !Number.isNaN(d.getTime()) ? d.toISOString() : null;
}

function fromParsed(parsed: ParsedMail, uid: number, mailbox: string, size: number, withBody: boolean): MailPayload {
  return {
    uid,
    mailbox,
    messageId: parsed.messageId ?? null,
    from: addresses(parsed.from)[0] ?? null,
    to: addresses(parsed.to),
    cc: addresses(parsed.cc),
    replyTo: addresses(parsed.replyTo),
    subject: parsed.subject ?? null,
    date: validDate(parsed.date),
    inReplyTo: parsed.inReplyTo ?? null,
    headers: headerRecord(parsed.headerLines),
    text: withBody ? (parsed.text ?? null) : null,
    html: withBody && typeof parsed.html === 'string' ? parsed.html : null,
    attachments: [],
    size,
  };
}

const PARSE_OPTIONS = { skipImageLinks: true, skipTextToHtml: true, keepCidLinks: true } as const;

/** A whole message as the server gave it, parsed; refused when it is no mail or an attachment is too big. */
export async function parseMail(source: Buffer, at: { uid: number; mailbox: string; size: number; maxAttachmentBytes: number | undefined }): Promise<ParseResult> {
  let parsed: ParsedMail;
  try {
    parsed = await mailParser().simpleParser(source, PARSE_OPTIONS);
  } catch (err) {
    const payload = emptyPayload(at.uid, at.mailbox, at.size);
    return { ok: false, refusal: { kind: 'MalformedMessage', message: `not a parsable mail: ${String((err as Error).message).slice(0, 200)}` }, payload };
  }
  const payload = fromParsed(parsed, at.uid, at.mailbox, at.size, true);
  // mailparser takes almost anything; bytes without a single header line are no mail at all.
  if (parsed.headers.size === 0) return { ok: false, refusal: { kind: 'MalformedMessage', message: 'not a mail: no header lines' }, payload };
  for (const a of parsed.attachments) {
    if (at.maxAttachmentBytes !== undefined && a.size > at.maxAttachmentBytes) {
      return { ok: false, refusal: { kind: 'AttachmentTooLarge', message: `attachment '${a.filename ?? '(unnamed)'}' is ${a.size} bytes, above max_attachment_bytes (${at.maxAttachmentBytes})` }, payload };
    }
    payload.attachments.push({ filename: a.filename ?? null, contentType: a.contentType, size: a.size, content: a.content.toString('base64'), contentId: a.cid ?? null, inline: a.contentDisposition === 'inline' });
  }
  return { ok: true, payload };
}

/** A message too large to download: what its header block says, for the dead letter. */
export async function parseHeadersOnly(headerBlock: Buffer, at: { uid: number; mailbox: string; size: number }): Promise<MailPayload> {
  try {
    return fromParsed(await mailParser().simpleParser(headerBlock, PARSE_OPTIONS), at.uid, at.mailbox, at.size, false);
  } catch {
    return emptyPayload(at.uid, at.mailbox, at.size);
  }
}

function emptyPayload(uid: number, mailbox: string, size: number): MailPayload {
  return { uid, mailbox, messageId: null, from: null, to: [], cc: [], replyTo: [], subject: null, date: null, inReplyTo: null, headers: {}, text: null, html: null, attachments: [], size };
}

/** ctx.headers: the main headers, one line each, and where the message is. */
export function serviceHeaders(payload: MailPayload): Record<string, string> {
  const out: Record<string, string> = { 'imap-uid': String(payload.uid), 'imap-mailbox': payload.mailbox };
  for (const name of MAIN_HEADERS) {
    const v = payload.headers[name];
    if (v !== undefined) out[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}
