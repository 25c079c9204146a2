import { hash } from 'node:crypto';
import { z } from 'zod';
import { hmac, SIGNATURE_ENCODINGS, signatureMatches, signedDataSchema } from '../../sdk/plugin/signature.ts';

/**
 * Host calls the sandbox process answers itself: pure functions that need no kernel state
 * and no secret, so they skip the trip to the kernel process. Arguments are checked here.
 * Anything that uses a named secret is not one of them: secrets stay in the kernel process.
 */
/** More than an isolate's default heap: a bound on the JSON parsed here, not a limit services meet. */
const MAX_DATA_BYTES = 64 * 1024 * 1024;
const data = signedDataSchema(MAX_DATA_BYTES);
const encoding = z.enum(SIGNATURE_ENCODINGS);
const hmacArgs = z.object({ key: z.string(), data, encoding }).strict();
const verifyArgs = hmacArgs.extend({ signature: z.string().max(1024) }).strict();
const digestArgs = z.object({ algorithm: z.enum(['sha256']), data, encoding }).strict();

type Reply = { ok: true; value: unknown } | { ok: false; error: { kind: string; status: number; message: string } };

const LOCAL: Record<string, (json: string) => unknown> = {
  'crypto.hmac': (json) => {
    const args = hmacArgs.parse(JSON.parse(json));
    return hmac('sha256', args.key, args.data).toString(args.encoding);
  },
  'crypto.verifyHmac': (json) => {
    const args = verifyArgs.parse(JSON.parse(json));
    return signatureMatches(hmac('sha256', args.key, args.data), args.signature, args.encoding);
  },
  'crypto.digest': (json) => {
    const args = digestArgs.parse(JSON.parse(json));
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
    const message = err instanceof z.ZodError ? `invalid arguments for ${op}: ${err.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}` : `${op} failed`;
    return { ok: false, error: { kind: 'Error', status: 500, message } };
  }
}
