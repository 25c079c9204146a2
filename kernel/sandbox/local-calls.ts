import { hash } from 'node:crypto';
import { hmac, readSignedData, SIGNATURE_ENCODINGS, signatureMatches, type SignatureEncoding } from '../../sdk/plugin/signature.ts';

/**
 * Host calls the sandbox process answers itself: pure functions that need no kernel state
 * and no secret, so they skip the trip to the kernel process. Arguments are checked here.
 * Anything that uses a named secret is not one of them: secrets stay in the kernel process.
 *
 * Checked by hand, not with zod: this is the only code of a sandbox process that would need it,
 * and loading zod there cost ≈ 8 MB of RSS in every sandbox process (bench/README.md, memory).
 */
/** More than an isolate's default heap: a bound on the JSON parsed here, not a limit services meet. */
const MAX_DATA_BYTES = 64 * 1024 * 1024;

type Reply = { ok: true; value: unknown } | { ok: false; error: { kind: string; status: number; message: string } };

class InvalidArguments extends Error {}

/** The arguments as an object with exactly these keys, each checked; throws InvalidArguments saying what is wrong. */
function readArgs<T>(json: string, fields: { [K in keyof T]: (value: unknown) => T[K] }): T {
  const value: unknown = JSON.parse(json);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidArguments('arguments must be an object');
  const extra = Object.keys(value).filter((k) => !Object.hasOwn(fields, k));
  if (extra.length) throw new InvalidArguments(`unknown keys ${extra.slice(0, 5).join(', ').slice(0, 200)}`);
  const out = {} as T;
  for (const key of Object.keys(fields) as Array<keyof T>) out[key] = fields[key]((value as Record<string, unknown>)[key as string]);
  return out;
}

const text =
  (name: string, max = Infinity) =>
  (v: unknown): string => {
    if (typeof v !== 'string' || v.length > max) throw new InvalidArguments(`${name} must be a string${max < Infinity ? ` of at most ${max} characters` : ''}`);
    return v;
  };
const data = (v: unknown): Buffer => {
  const bytes = readSignedData(v, MAX_DATA_BYTES);
  if (!Buffer.isBuffer(bytes)) throw new InvalidArguments(bytes.problem);
  return bytes;
};
const encoding = (v: unknown): SignatureEncoding => {
  if (!(SIGNATURE_ENCODINGS as readonly unknown[]).includes(v)) throw new InvalidArguments(`encoding must be one of ${SIGNATURE_ENCODINGS.join(', ')}`);
  return v as SignatureEncoding;
};
const sha256 = (v: unknown): 'sha256' => {
  if (v !== 'sha256') throw new InvalidArguments('algorithm must be sha256');
  return v;
};

const LOCAL: Record<string, (json: string) => unknown> = {
  'crypto.hmac': (json) => {
    const args = readArgs(json, { key: text('key'), data, encoding });
    return hmac('sha256', args.key, args.data).toString(args.encoding);
  },
  'crypto.verifyHmac': (json) => {
    const args = readArgs(json, { key: text('key'), data, encoding, signature: text('signature', 1024) });
    return signatureMatches(hmac('sha256', args.key, args.data), args.signature, args.encoding);
  },
  'crypto.digest': (json) => {
    const args = readArgs(json, { algorithm: sha256, data, encoding });
    return hash(args.algorithm, args.data, args.encoding);
  },
};

export function isLocalHostCall(op: string): boolean {
  return Object.hasOwn(LOCAL, op);
}

export function runLocalHostCall(op: string, argsJson: string): Reply {
  try {
    return { ok: true, value: LOCAL[op]!(argsJson) };
  } catch (err) {
    const message = err instanceof InvalidArguments ? `invalid arguments for ${op}: ${err.message}` : `${op} failed`;
    return { ok: false, error: { kind: 'Error', status: 500, message } };
  }
}
