import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Secret hashing (security definitions' secrets, the admin credential). Stored form:
 *   scrypt$<log2 N>$<r>$<p>$<salt base64url>$<hash base64url>
 * The parameters travel with each hash, so raising the cost later needs no migration:
 * old hashes keep verifying, new ones use the new cost.
 */
export interface ScryptParams {
  log2N: number;
  r: number;
  p: number;
}

export const SCRYPT_PARAMS: Readonly<ScryptParams> = { log2N: 15, r: 8, p: 1 };
const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** Bounds for hashes arriving from outside (control socket): a huge N would be a memory bomb. */
const MAX_LOG2_N = 20;
const MAX_R = 16;
const MAX_P = 4;

export interface ScryptHash extends ScryptParams {
  salt: Buffer;
  key: Buffer;
}

function derive(secret: string, salt: Buffer, log2N: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** log2N;
  // scrypt needs 128 * N * r bytes; Node's default maxmem (32 MiB) is just short of N=2^15, r=8.
  const maxmem = 256 * N * r * p + 1024 * 1024;
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, KEY_BYTES, { N, r, p, maxmem }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashSecret(secret: string, params: Readonly<ScryptParams> = SCRYPT_PARAMS): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(secret, salt, params.log2N, params.r, params.p);
  return ['scrypt', params.log2N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Parses a stored hash; undefined when it is not one this module wrote (or its cost is out of bounds). */
export function parseScryptHash(stored: string): ScryptHash | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [log2N, r, p] = parts.slice(1, 4).map((s) => (/^[0-9]{1,2}$/.test(s!) ? Number(s) : NaN));
  if (!(log2N! >= 10 && log2N! <= MAX_LOG2_N && r! >= 1 && r! <= MAX_R && p! >= 1 && p! <= MAX_P)) return undefined;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const key = Buffer.from(parts[5]!, 'base64url');
  if (salt.length < SALT_BYTES || key.length !== KEY_BYTES) return undefined;
  return { log2N: log2N!, r: r!, p: p!, salt, key };
}

export function isScryptHash(stored: string): boolean {
  return parseScryptHash(stored) !== undefined;
}

/** Timing-safe check of a presented secret against a stored hash. A malformed hash never matches. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const parsed = parseScryptHash(stored);
  if (parsed === undefined) return false;
  const key = await derive(secret, parsed.salt, parsed.log2N, parsed.r, parsed.p);
  return timingSafeEqual(key, parsed.key);
}

/** A fresh random secret: 32 base64url characters (192 bits), safe in headers and shells. */
export function randomSecret(): string {
  return randomBytes(24).toString('base64url');
}

