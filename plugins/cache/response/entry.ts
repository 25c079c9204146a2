import { createHash } from 'node:crypto';
import type { Exchange } from '../../../sdk/plugin/index.ts';
import type { ResponseCacheSettings } from './schema.ts';

/** An answer as stored: what the service sent, and when it was stored (calendar ms, for Age and a request's max-age). */
export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  contentType: string | undefined;
  body: string | Buffer | undefined;
  storedAt: number;
}

type Head = { s: number; h: Record<string, string>; t: string | null; b: 'text' | 'base64' | 'none'; at: number };

/**
 * One line of JSON (status, headers, type, when), a line break, then the body: text as it is,
 * bytes in base64. A hit reads the short head and slices the body, whatever its size.
 */
export function encodeAnswer(answer: StoredAnswer): string {
  const body = answer.body;
  const kind = body === undefined ? 'none' : Buffer.isBuffer(body) ? 'base64' : 'text';
  const head: Head = { s: answer.status, h: answer.headers, t: answer.contentType ?? null, b: kind, at: answer.storedAt };
  return `${JSON.stringify(head)}\n${body === undefined ? '' : Buffer.isBuffer(body) ? body.toString('base64') : body}`;
}

/** The answer, or undefined for text that is not one (then it counts as a miss and is replaced). */
export function decodeAnswer(text: string): StoredAnswer | undefined {
  const newline = text.indexOf('\n');
  if (newline === -1) return undefined;
  let head: Head;
  try {
    head = JSON.parse(text.slice(0, newline)) as Head;
  } catch {
    return undefined;
  }
  if (typeof head !== 'object' || head === null || !Number.isInteger(head.s) || typeof head.h !== 'object' || head.h === null || typeof head.at !== 'number') return undefined;
  const rest = text.slice(newline + 1);
  const body = head.b === 'none' ? undefined : head.b === 'base64' ? Buffer.from(rest, 'base64') : rest;
  return { status: head.s, headers: head.h, contentType: head.t ?? undefined, body, storedAt: head.at };
}

/**
 * Keys of a channel's answers start with this, then the path as the request line spells it and a
 * space (a request target cannot hold one): a purge of the channel, or of one path, is a prefix.
 */
export function answerPrefix(channel: string, path?: string): string {
  return `r:${encodeURIComponent(channel)} ${path === undefined ? '' : `${path} `}`;
}

function headerText(value: string | readonly string[] | undefined): string | readonly string[] | null {
  return value === undefined ? null : value;
}

/**
 * What else tells answers of one path apart: the chosen query parameters (all by default) and
 * request headers, and the caller (vary_user), hashed: keys stay short, and no username or header
 * value is spelled out in a Redis key.
 */
export function variantOf(ex: Exchange, settings: ResponseCacheSettings): string {
  const parts: unknown[] = [];
  const names = settings.vary_query ?? Object.keys(ex.query);
  if (names.length) parts.push(names.slice().sort().map((name) => [name, ex.query[name] ?? null]));
  if (settings.vary_headers.length) parts.push(settings.vary_headers.map((name) => headerText(ex.headers[name])));
  if (settings.vary_user && ex.auth !== undefined) parts.push([ex.auth.definition, ex.auth.username]);
  return parts.length === 0 ? '' : createHash('sha256').update(JSON.stringify(parts)).digest('base64url');
}
