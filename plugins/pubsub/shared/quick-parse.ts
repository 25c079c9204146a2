import { MAX_EXPIRATION_SECONDS, MAX_TEXT_FIELD } from './fields.ts';

/**
 * The common publish body checked by hand: zod's safeParse was the largest single cost of a
 * publish in the plugin's own code. These functions never refuse anything: they return the
 * parsed request when every field is plainly valid, and undefined for anything else, which then
 * goes to the zod schema (the one source of truth, which words the refusal). Unknown keys are
 * ignored, as the schemas strip them. test/plugins/pubsub/shared/quick-parse.test.ts checks that
 * both agree on every body the quick path accepts.
 */

export interface QuickFields {
  data: unknown;
  priority: number;
  expiration: number | undefined;
  correl_id: string | undefined;
  in_reply_to: string | undefined;
  ext_client_id: string | undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

/** messageData: a non-empty string, a finite number, a boolean, an array or an object. */
function isData(v: unknown): boolean {
  switch (typeof v) {
    case 'string':
      return v.length > 0;
    case 'number':
      return Number.isFinite(v);
    case 'boolean':
      return true;
    case 'object':
      return v !== null && (Array.isArray(v) || isRecord(v));
    default:
      return false;
  }
}

function intIn(v: number, min: number, max: number): boolean {
  return Number.isSafeInteger(v) && v >= min && v <= max;
}

/** An optional text field: absent, or a string within the length limit; null means "not plain". */
function text(v: unknown): string | undefined | null {
  if (v === undefined) return undefined;
  return typeof v === 'string' && v.length <= MAX_TEXT_FIELD ? v : null;
}

/**
 * The fields both variants share. `minPriority` is A's 1 or B's 0; `defaultExpiration` is B's
 * default (A has none).
 */
export function quickFields(body: unknown, minPriority: number, defaultExpiration: number | undefined): QuickFields | undefined {
  if (!isRecord(body)) return undefined;
  const data = body.data;
  if (!isData(data)) return undefined;
  // `=== undefined`, not `??`: a null field is invalid, not absent.
  const priority = body.priority === undefined ? 5 : body.priority;
  if (typeof priority !== 'number' || !intIn(priority, minPriority, 9)) return undefined;
  const expiration = body.expiration === undefined ? defaultExpiration : body.expiration;
  if (expiration !== undefined && (typeof expiration !== 'number' || !intIn(expiration, 1, MAX_EXPIRATION_SECONDS))) return undefined;
  const correlId = text(body.correl_id);
  const inReplyTo = text(body.in_reply_to);
  const extClientId = text(body.ext_client_id);
  if (correlId === null || inReplyTo === null || extClientId === null) return undefined;
  return { data, priority, expiration, correl_id: correlId, in_reply_to: inReplyTo, ext_client_id: extClientId };
}
