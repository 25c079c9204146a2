import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { hashSecret, randomSecret } from '../../../sdk/plugin/index.ts';

// The scrypt hashing lives in the plugin SDK (the admin plugin uses it too); the family keeps its names.
export { SCRYPT_PARAMS, hashSecret, isScryptHash, parseScryptHash, randomSecret, verifySecret, type ScryptHash, type ScryptParams } from '../../../sdk/plugin/index.ts';

let dummyHash: Promise<string> | undefined;
/**
 * A hash nobody knows the secret of. Verifying against it when no definition matched
 * costs the same KDF as a real check, so response time does not reveal which usernames exist.
 */
export function unknownSecretHash(): Promise<string> {
  dummyHash ??= hashSecret(randomSecret());
  return dummyHash;
}

/**
 * Digests under a random key that lives only in this process. Used as the cache key of a
 * presented credential: the cache never holds a secret, and its digests are worthless
 * outside the process (no offline guessing against a memory dump of the cache alone).
 */
export class KeyedDigest {
  private readonly key = randomBytes(32);
  /** The key as text, prefixed to the value: one-shot SHA-256 costs a third of an HMAC object. */
  private readonly prefix = this.key.toString('base64url');

  /** Digest as a string (Map key), on the hot path. SHA-256(key ‖ value): no digest ever leaves the process, so length extension is moot. */
  text(value: string): string {
    return hash('sha256', this.prefix + value, 'base64');
  }

  /** HMAC-SHA256 as bytes, for timingSafeEqual (always 32 bytes, whatever the input length). */
  bytes(value: string): Buffer {
    return createHmac('sha256', this.key).update(value).digest();
  }
}

/** Timing-safe equality of two digests (KeyedDigest.bytes: always 32 bytes). */
export function safeEqualDigests(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
