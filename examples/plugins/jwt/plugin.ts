import { createLocalJWKSet, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';
import { definePlugin, SvcError, type AuthInfo, type Clock, type Exchange, type HookFn, type SvcConfig } from 'svc/sdk/plugin';
import { isHmac, JWT, jwtEntries, jwtShape, readJwks, validateJwt, type JwtEntry } from './schema.ts';

/** RFC 6750 §3: the challenge of a request without a token, and of one whose token was refused. */
export const CHALLENGE_MISSING = 'Bearer realm="svc"';
export const CHALLENGE_INVALID = 'Bearer realm="svc", error="invalid_token"';

/** Compact JWS after `Bearer ` (the scheme is case-insensitive); the signature part may be empty (alg none, refused later). */
const BEARER = /^bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/i;

/** Checks one token against one definition; resolves the authenticated caller or throws a jose error. */
type Verify = (token: string) => Promise<AuthInfo>;

interface JwtState {
  clock: Clock;
  /** By definition name, rebuilt on every accepted config. */
  verifiers: Map<string, Verify>;
}

const optionsSchema = z.object({}).strict().default({}).describe('The jwt plugin has no options of its own; definitions live in `security[]`.');

function verifierOf(entry: JwtEntry, clock: Clock): Verify {
  const secret = entry.secret === undefined ? undefined : new TextEncoder().encode(entry.secret);
  const jwks = entry.jwks_file === undefined ? undefined : readJwks(entry.jwks_file);
  // validateConfig refused unreadable files; a file changed since then is a 401, never a crash.
  const keySet = jwks === undefined || typeof jwks === 'string' ? undefined : createLocalJWKSet(jwks as Parameters<typeof createLocalJWKSet>[0]);
  // jose checks the header's alg against `algorithms` before asking for a key; the key then
  // matches the alg's family, so an RS256 public key can never be used as an HS256 secret.
  const key: JWTVerifyGetKey = (header, token) => {
    if (isHmac(header.alg)) {
      if (secret) return secret;
    } else if (keySet) {
      return keySet(header, token);
    }
    throw new errors.JWKSNoMatchingKey();
  };
  return async (token) => {
    const { payload } = await jwtVerify(token, key, {
      algorithms: entry.algorithms,
      issuer: entry.issuer,
      audience: entry.audience,
      clockTolerance: entry.clock_tolerance_s,
      currentDate: new Date(clock.now()),
      requiredClaims: ['sub'],
    });
    if (typeof payload.sub !== 'string' || payload.sub === '') throw new errors.JWTClaimValidationFailed('"sub" claim must be a non-empty string', payload, 'sub', 'invalid');
    return Object.freeze({ type: JWT, definition: entry.name, username: payload.sub });
  };
}

/** The authenticate step of a channel secured by one jwt definition. */
function bearerAuthenticator(entry: JwtEntry, verify: Verify): HookFn {
  const reject = (ex: Exchange, reason: string, challenge: string): SvcError => {
    ex.log.debug({ channel: ex.channel.name, security: entry.name, reason }, 'authentication failed');
    return new SvcError('UNAUTHORIZED', undefined, { headers: { 'WWW-Authenticate': challenge } });
  };
  return async function authenticateJwt(ex) {
    const header = ex.headers.authorization;
    if (header === undefined) throw reject(ex, 'no credentials', CHALLENGE_MISSING);
    const match = typeof header === 'string' ? BEARER.exec(header) : null;
    if (!match) throw reject(ex, 'Authorization is not one Bearer JWT', CHALLENGE_INVALID);
    try {
      ex.auth = await verify(match[1]!);
    } catch (err) {
      if (err instanceof errors.JOSEError) throw reject(ex, err.code, CHALLENGE_INVALID);
      throw err;
    }
    // The service learns who called (ctx.user), never the token itself.
    ex.hideHeader('authorization');
  };
}

/** JWT bearer tokens on channels: `security[]` entries of type jwt. See README.md. */
export default definePlugin<z.infer<typeof optionsSchema>, JwtState>({
  name: 'jwt',
  kind: 'security',
  version: '1.0.0',
  sdk: '^1.0.0',
  configSchema: optionsSchema,
  contributes: {
    securityTypes: { [JWT]: jwtShape },
    validateConfig: validateJwt,
    // How its channels read in the channels' OpenAPI document (svc openapi --channels).
    channelOpenApi: {
      security: (target, config) =>
        config.security.some((s) => s.name === target && s.type === JWT) ? { [target]: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } : undefined,
    },
  },
  setup: (kernel) => ({ clock: kernel.clock, verifiers: new Map() }),
  onConfig(state, config: SvcConfig) {
    state.verifiers = new Map(jwtEntries(config).map((e) => [e.name, verifierOf(e, state.clock)]));
  },
  hooks: {
    authenticate: ({ channel, config, state }) => {
      const entry = jwtEntries(config).find((e) => e.name === channel.security);
      if (entry === undefined) return undefined;
      // Fail closed: a jwt channel is never left open for want of a verifier.
      const verify = state.verifiers.get(entry.name) ?? verifierOf(entry, state.clock);
      return bearerAuthenticator(entry, verify);
    },
  },
});
