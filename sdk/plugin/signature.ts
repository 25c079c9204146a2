import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/**
 * Signatures over data sent by services (the SDK's HMAC helpers), shared by the host calls that
 * compute them: in the sandbox process with a key the service passes, in the kernel process with
 * a named secret (plugins/secrets/named).
 */
export const HMAC_ALGORITHMS = ['sha256', 'sha1'] as const;
export type HmacAlgorithm = (typeof HMAC_ALGORITHMS)[number];
export const SIGNATURE_ENCODINGS = ['hex', 'base64'] as const;
export type SignatureEncoding = (typeof SIGNATURE_ENCODINGS)[number];

/**
 * Data as the SDK sends it: text (hashed as UTF-8), or bytes as base64 (`bytes`, a list of
 * numbers, is the older spelling). At most `maxBytes` bytes once decoded.
 */
export function signedDataSchema(maxBytes: number) {
  const tooLarge = `data is larger than ${maxBytes} bytes`;
  return z
    .union([
      z.object({ text: z.string() }).strict(),
      z.object({ base64: z.string() }).strict(),
      z.object({ bytes: z.array(z.number().int().min(0).max(255)) }).strict(),
    ])
    .transform((data, ctx) => {
      const bytes = decodeSignedData(data, maxBytes);
      if (bytes === undefined) {
        ctx.addIssue({ code: 'custom', message: tooLarge });
        return z.NEVER;
      }
      return bytes;
    });
}

type SignedData = { text: string } | { base64: string } | { bytes: number[] };

/** The bytes of checked data, or undefined when they are more than `maxBytes`. */
function decodeSignedData(data: SignedData, maxBytes: number): Buffer | undefined {
  // Lengths first: a UTF-8 text has at least as many bytes as UTF-16 units, and nothing oversized is decoded.
  const size = 'text' in data ? data.text.length : 'base64' in data ? Math.floor((data.base64.length * 3) / 4) - 2 : data.bytes.length;
  const bytes = size > maxBytes ? undefined : 'text' in data ? Buffer.from(data.text, 'utf8') : 'base64' in data ? Buffer.from(data.base64, 'base64') : Buffer.from(data.bytes);
  return bytes === undefined || bytes.length > maxBytes ? undefined : bytes;
}

/**
 * What `signedDataSchema` accepts, checked by hand: the sandbox process checks the arguments of
 * its local crypto calls with this, because loading zod there costs every sandbox process ≈ 8 MB.
 * The bytes, or what is wrong.
 */
export function readSignedData(value: unknown, maxBytes: number): Buffer | { problem: string } {
  const shape = 'data must be exactly one of {text: string}, {base64: string}, {bytes: integers 0-255}';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { problem: shape };
  const keys = Object.keys(value);
  const v = value as Record<string, unknown>;
  if (keys.length !== 1) return { problem: shape };
  const ok =
    (keys[0] === 'text' && typeof v.text === 'string') ||
    (keys[0] === 'base64' && typeof v.base64 === 'string') ||
    (keys[0] === 'bytes' && Array.isArray(v.bytes) && v.bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255));
  if (!ok) return { problem: shape };
  return decodeSignedData(value as SignedData, maxBytes) ?? { problem: `data is larger than ${maxBytes} bytes` };
}

export function hmac(algorithm: HmacAlgorithm, key: string | Buffer, data: Buffer): Buffer {
  return createHmac(algorithm, key).update(data).digest();
}

/**
 * Timing-safe check of a signature a caller sent against the expected digest. Only the canonical
 * spelling counts (hex in either case; base64 with its padding): Buffer.from would skip junk
 * after valid digits.
 */
export function signatureMatches(expected: Buffer, signature: string, encoding: SignatureEncoding): boolean {
  const text = signature.trim();
  const given = Buffer.from(text, encoding);
  const canonical = encoding === 'hex' ? given.toString('hex') === text.toLowerCase() : given.toString('base64') === text;
  return canonical && given.length === expected.length && timingSafeEqual(given, expected);
}
