import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/**
 * Host calls the sandbox process answers itself: pure functions that need no kernel state
 * and no secret, so they skip the trip to the kernel process. Arguments are checked here.
 */
const data = z.union([z.object({ text: z.string() }).strict(), z.object({ bytes: z.array(z.number().int().min(0).max(255)) }).strict()]);
const hmacArgs = z.object({ key: z.string(), data, encoding: z.enum(['hex', 'base64']) }).strict();
const verifyArgs = hmacArgs.extend({ signature: z.string().max(1024) }).strict();

const HEX = /^[0-9a-fA-F]{64}$/;
const BASE64 = /^[A-Za-z0-9+/]{43}=$/;

type Reply = { ok: true; value: unknown } | { ok: false; error: { kind: string; status: number; message: string } };

function bytesOf(d: z.infer<typeof data>): Buffer {
  return 'text' in d ? Buffer.from(d.text, 'utf8') : Buffer.from(d.bytes);
}

function hmac(args: z.infer<typeof hmacArgs>): Buffer {
  return createHmac('sha256', args.key).update(bytesOf(args.data)).digest();
}

const LOCAL: Record<string, (json: string) => unknown> = {
  'crypto.hmac': (json) => {
    const args = hmacArgs.parse(JSON.parse(json));
    return hmac(args).toString(args.encoding);
  },
  'crypto.verifyHmac': (json) => {
    const args = verifyArgs.parse(JSON.parse(json));
    const expected = hmac(args);
    const text = args.signature.trim();
    // Only the canonical spelling counts: Buffer.from would skip junk after valid digits.
    if (!(args.encoding === 'hex' ? HEX : BASE64).test(text)) return false;
    const given = Buffer.from(text, args.encoding);
    return given.length === expected.length && timingSafeEqual(given, expected);
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
