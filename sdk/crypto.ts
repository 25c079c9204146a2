import { callHost } from './internal/runtime.ts';
import { toBase64 } from './internal/bytes.ts';

/**
 * Signature and digest helpers. The host computes them (node:crypto); comparisons there are
 * timing-safe. `data` is text (hashed as UTF-8, e.g. ctx.rawBody) or bytes (e.g. ctx.rawBytes()).
 * For keys the service must not hold, use a named secret: `secret(name)` (sdk/secrets.ts).
 */
export type Data = string | Uint8Array;

/** Data as host calls take it (kernel/sandbox/local-calls.ts, sdk/plugin/signature.ts). */
export function wireData(fn: string, data: unknown): { text: string } | { base64: string } {
  if (typeof data === 'string') return { text: data };
  if (data instanceof Uint8Array) return { base64: toBase64(data) };
  throw new TypeError(`${fn}: data must be a string or a Uint8Array`);
}

function wire(fn: string, key: unknown, data: unknown): { text: string } | { base64: string } {
  if (typeof key !== 'string') throw new TypeError(`${fn}: key must be a string`);
  return wireData(fn, data);
}

export function checkSignature(fn: string, signature: unknown): void {
  if (typeof signature !== 'string') throw new TypeError(`${fn}: signature must be a string`);
}

export async function hmacSha256Hex(key: string, data: Data): Promise<string> {
  return (await callHost('crypto.hmac', { key, data: wire('hmacSha256Hex', key, data), encoding: 'hex' })) as string;
}

export async function hmacSha256Base64(key: string, data: Data): Promise<string> {
  return (await callHost('crypto.hmac', { key, data: wire('hmacSha256Base64', key, data), encoding: 'base64' })) as string;
}

/** True when `signature` (hex) is the HMAC-SHA256 of data under key; timing-safe. */
export async function verifyHmacSha256Hex(key: string, data: Data, signature: string): Promise<boolean> {
  checkSignature('verifyHmacSha256Hex', signature);
  return (await callHost('crypto.verifyHmac', { key, data: wire('verifyHmacSha256Hex', key, data), encoding: 'hex', signature })) as boolean;
}

/** True when `signature` (base64) is the HMAC-SHA256 of data under key; timing-safe. */
export async function verifyHmacSha256Base64(key: string, data: Data, signature: string): Promise<boolean> {
  checkSignature('verifyHmacSha256Base64', signature);
  return (await callHost('crypto.verifyHmac', { key, data: wire('verifyHmacSha256Base64', key, data), encoding: 'base64', signature })) as boolean;
}

/** SHA-256 of data, as 64 lower-case hex digits (a content hash, an ETag, a `x-amz-content-sha256`). */
export async function sha256Hex(data: Data): Promise<string> {
  return (await callHost('crypto.digest', { algorithm: 'sha256', data: wireData('sha256Hex', data), encoding: 'hex' })) as string;
}

/** SHA-256 of data, as base64 with padding (a `Digest: sha-256=...` header, Subresource Integrity). */
export async function sha256Base64(data: Data): Promise<string> {
  return (await callHost('crypto.digest', { algorithm: 'sha256', data: wireData('sha256Base64', data), encoding: 'base64' })) as string;
}

/** Constant-time comparison of two strings (length leaks, content does not). */
export function timingSafeEqual(a: string, b: string): boolean {
  if (typeof a !== 'string' || typeof b !== 'string') throw new TypeError('timingSafeEqual: both arguments must be strings');
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}
