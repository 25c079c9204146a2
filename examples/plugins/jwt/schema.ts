import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { ConfigIssue, SvcConfig } from 'svc/sdk/plugin';

export const JWT = 'jwt';

export const HMAC_ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const;
export const JWKS_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
const ALGORITHMS = [...HMAC_ALGORITHMS, ...JWKS_ALGORITHMS] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

export const isHmac = (alg: string): boolean => (HMAC_ALGORITHMS as readonly string[]).includes(alg);

/** RFC 7518 §3.2: an HMAC key at least as long as the hash output (256 bits for HS256). */
export const MIN_SECRET_LENGTH = 32;

/** Keys of a `security[]` entry with `type: jwt` (name and type are added by the kernel). */
export const jwtShape = {
  algorithms: z
    .array(z.enum(ALGORITHMS))
    .min(1)
    .describe(
      'Signature algorithms a token may use (its header `alg`); any other, `none` included, is refused. ' +
        'HS* need `secret`, the others need `jwks_file`.',
    ),
  secret: z
    .string()
    .min(MIN_SECRET_LENGTH, `must be at least ${MIN_SECRET_LENGTH} characters (RFC 7518 §3.2)`)
    .optional()
    .describe('Shared secret of HS256/HS384/HS512 tokens, as UTF-8 text; write `${ENV_NAME}` to take it from the environment.'),
  jwks_file: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Path of a JSON Web Key Set file ({"keys": [...]}) holding the public keys of RS/PS/ES/EdDSA tokens, chosen by `kid`; ' +
        'relative paths are taken from the working directory. Read when config loads.',
    ),
  issuer: z.string().min(1).optional().describe('Required `iss` claim; absent: not checked.'),
  audience: z
    .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
    .optional()
    .describe('Accepted `aud` value(s): the token must name at least one; absent: not checked.'),
  clock_tolerance_s: z
    .number()
    .int()
    .min(0)
    .max(300)
    .default(0)
    .describe('Seconds of clock skew allowed when checking `exp` and `nbf`.'),
};

export const jwtEntrySchema = z.object(jwtShape);
export type JwtEntry = z.infer<typeof jwtEntrySchema> & { name: string; type: typeof JWT };

export function jwtEntries(config: SvcConfig): JwtEntry[] {
  return config.security.filter((s) => s.type === JWT) as JwtEntry[];
}

/** A JWKS file's shape, enough to hand it to jose (which checks each key when it is used). */
export const jwksSchema = z.object({
  keys: z.array(z.object({ kty: z.string() }).passthrough()).min(1),
});
export type Jwks = z.infer<typeof jwksSchema>;

/** Reads and checks a JWKS file; a reason string when it cannot be used. */
export function readJwks(file: string): Jwks | string {
  let text: string;
  try {
    text = readFileSync(resolve(file), 'utf8');
  } catch (err) {
    return `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return `${file} is not JSON`;
  }
  const parsed = jwksSchema.safeParse(data);
  return parsed.success ? (parsed.data as Jwks) : `${file} is not a JSON Web Key Set ({"keys": [ … ]} with at least one key)`;
}

/** Each algorithm has its key material, and no key material is left unused; the JWKS file is readable. */
export function validateJwt(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  config.security.forEach((s, i) => {
    if (s.type !== JWT) return;
    const e = s as JwtEntry;
    const hmac = e.algorithms.some(isHmac);
    const asym = e.algorithms.some((a) => !isHmac(a));
    if (hmac && e.secret === undefined) issues.push({ path: ['security', i, 'secret'], message: 'required by the HS* algorithms listed' });
    if (!hmac && e.secret !== undefined) issues.push({ path: ['security', i, 'secret'], message: 'unused: no HS* algorithm is listed' });
    if (asym && e.jwks_file === undefined) issues.push({ path: ['security', i, 'jwks_file'], message: 'required by the RS/PS/ES/EdDSA algorithms listed' });
    if (!asym && e.jwks_file !== undefined) issues.push({ path: ['security', i, 'jwks_file'], message: 'unused: only HS* algorithms are listed' });
    if (asym && e.jwks_file !== undefined) {
      const jwks = readJwks(e.jwks_file);
      if (typeof jwks === 'string') issues.push({ path: ['security', i, 'jwks_file'], message: jwks });
    }
  });
  return issues;
}
