import { z } from 'zod';
import {
  HMAC_ALGORITHMS,
  SIGNATURE_ENCODINGS,
  SvcError,
  hmac,
  signatureMatches,
  signedDataSchema,
  type HostCall,
  type HostCallContext, scopedFor } from '../../../sdk/plugin/index.ts';
import { secretNameSchema } from './schema.ts';
import type { SecretsInUse } from './secrets-in-use.ts';

/** Webhook bodies and signed strings, not files: a bound on what the kernel process parses and hashes per call. */
export const MAX_SIGNED_BYTES = 8 * 1024 * 1024;

export const hmacArgs = z
  .object({
    name: secretNameSchema,
    algorithm: z.enum(HMAC_ALGORITHMS),
    encoding: z.enum(SIGNATURE_ENCODINGS),
    data: signedDataSchema(MAX_SIGNED_BYTES),
  })
  .strict();
export const verifyArgs = hmacArgs.extend({ signature: z.string().max(1024) }).strict();

type HmacArgs = z.infer<typeof hmacArgs>;

/**
 * HMACs with a named secret, answered in the kernel process: these ops are not sandbox-local
 * calls, so the value never reaches a sandbox process. Services get the signature or a yes/no.
 */
export function secretHostCalls(secrets: SecretsInUse): HostCall[] {
  const keyFor = (args: HmacArgs, ctx: HostCallContext): string => {
    try {
      return secrets.use(scopedFor(ctx.service, args.name), ctx.service);
    } catch (err) {
      if (err instanceof SvcError) ctx.log.warn({ secret: args.name, refused: err.code }, `named secret refused: ${err.details}`);
      throw err;
    }
  };
  const sign: HostCall<HmacArgs> = {
    op: 'secrets.hmac',
    args: hmacArgs,
    handler: async (args, ctx) => hmac(args.algorithm, keyFor(args, ctx), args.data).toString(args.encoding),
  };
  const verify: HostCall<z.infer<typeof verifyArgs>> = {
    op: 'secrets.verifyHmac',
    args: verifyArgs,
    handler: async (args, ctx) => signatureMatches(hmac(args.algorithm, keyFor(args, ctx), args.data), args.signature, args.encoding),
  };
  return [sign, verify];
}
