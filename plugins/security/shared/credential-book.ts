import type { AuthInfo } from '../../../sdk/plugin/index.ts';
import { KeyedDigest, safeEqualDigests, unknownSecretHash, verifySecret } from './secrets.ts';
import { VerifiedCache } from './verified-cache.ts';

/** The current secret of one definition. Replaced, never mutated: a new object is a new version. */
export interface SecretRecord {
  readonly definition: string;
  /** scrypt hash (see secrets.ts). */
  readonly hash: string;
  /** Digest of the username (Basic Auth); undefined for types without one. */
  readonly usernameDigest: Buffer | undefined;
  /** Shared by every request this record authenticates; frozen. */
  readonly auth: Readonly<AuthInfo>;
}

/** What a client presented, once its header parsed. */
export interface Presented {
  username?: string;
  secret: string;
}

/**
 * Which definitions may match on a channel: one definition, a group's members, or every
 * definition of the type (pub/sub). `key` identifies the scope in the in-flight map.
 */
export interface Scope {
  readonly key: string;
  readonly names: ReadonlySet<string> | undefined;
}

export const ANY_DEFINITION: Scope = { key: '*', names: undefined };

export function scopeOf(names: Iterable<string>): Scope {
  const set = new Set(names);
  return { key: [...set].sort().join('\n'), names: set };
}

export interface CredentialBookOptions {
  type: string;
  /** Turns the raw token (header part) into credentials; undefined when malformed. */
  parse: (token: string) => Presented | undefined;
  maxCacheEntries?: number;
  /**
   * Milliseconds on a monotonic clock (default performance.now()): how long a failure is
   * remembered is a duration, which a wall clock set back or forward must not stretch or cut.
   */
  elapsed?: () => number;
}

/**
 * The in-memory secrets of one security type and the verification around them.
 * Hot path: digest of the token → cache → identity check against the current record,
 * no KDF and no allocation beyond the digest. Cold path: parse, compare usernames
 * timing-safe against every candidate, then one scrypt check per remaining candidate.
 */
const FAILED_TTL_MS = 60_000;
const MAX_FAILED = 10_000;

export class CredentialBook {
  readonly type: string;
  private readonly parse: (token: string) => Presented | undefined;
  private readonly elapsed: () => number;
  private readonly digest = new KeyedDigest();
  private readonly cache: VerifiedCache<SecretRecord>;
  private readonly pending = new Map<string, Promise<SecretRecord | undefined>>();
  private records = new Map<string, SecretRecord>();
  /**
   * Credentials that failed recently (digest → when to forget, on `elapsed`): the same wrong credential sent
   * again is refused without another KDF run, so repeating one bad request cannot burn CPU.
   * Forgotten as soon as any record changes (the credential may have become valid).
   */
  private readonly failed = new Map<string, number>();
  /** Bumped whenever a record changes, so a failure seen across a change is not remembered. */
  private generation = 0;

  constructor(opts: CredentialBookOptions) {
    this.type = opts.type;
    this.parse = opts.parse;
    this.elapsed = opts.elapsed ?? (() => performance.now());
    this.cache = new VerifiedCache(opts.maxCacheEntries);
  }

  makeRecord(definition: string, hash: string, username?: string): SecretRecord {
    const auth: AuthInfo = { type: this.type, definition, username: username ?? definition };
    return {
      definition,
      hash,
      usernameDigest: username === undefined ? undefined : this.digest.bytes(username),
      auth: Object.freeze(auth),
    };
  }

  current(definition: string): SecretRecord | undefined {
    return this.records.get(definition);
  }

  /** Installs a whole new set of records (config applied); stale cache entries go. */
  replaceAll(records: Iterable<SecretRecord>): void {
    const next = new Map<string, SecretRecord>();
    for (const r of records) next.set(r.definition, r);
    this.records = next;
    this.cache.retain((r) => next.get(r.definition) === r);
    this.failed.clear();
    this.generation++;
  }

  /** Installs one record (secret rotated at run time). */
  put(record: SecretRecord): void {
    this.records.set(record.definition, record);
    this.cache.retain((r) => this.records.get(r.definition) === r);
    this.failed.clear();
    this.generation++;
  }

  /**
   * The record the token authenticates within the scope, or undefined.
   * Synchronous on a cache hit, a promise otherwise.
   */
  authenticate(token: string, scope: Scope): SecretRecord | undefined | Promise<SecretRecord | undefined> {
    const digest = this.digest.text(token);
    const hit = this.cache.get(digest);
    if (hit !== undefined && this.records.get(hit.definition) === hit && (scope.names === undefined || scope.names.has(hit.definition))) {
      return hit;
    }
    // A credential fails within a scope: valid on one channel, it may be refused on another.
    const failedKey = `${scope.key}\0${digest}`;
    const failedUntil = this.failed.get(failedKey);
    if (failedUntil !== undefined) {
      if (failedUntil > this.elapsed()) return Promise.resolve(undefined);
      this.failed.delete(failedKey);
    }
    return this.verifyCold(digest, token, scope);
  }

  private async verifyCold(digest: string, token: string, scope: Scope): Promise<SecretRecord | undefined> {
    // Concurrent first requests with the same credentials share one parse and KDF run.
    const pendingKey = `${scope.key}\0${digest}`;
    let running = this.pending.get(pendingKey);
    if (running === undefined) {
      running = this.match(token, scope).finally(() => this.pending.delete(pendingKey));
      this.pending.set(pendingKey, running);
    }
    const generation = this.generation;
    const record = await running;
    if (record === undefined) {
      // Remembered only if no record changed meanwhile, and within a bound (oldest forgotten first).
      if (this.generation === generation) {
        if (this.failed.size >= MAX_FAILED) this.failed.delete(this.failed.keys().next().value!);
        this.failed.set(`${scope.key}\0${digest}`, this.elapsed() + FAILED_TTL_MS);
      }
      return undefined;
    }
    // The definition may have changed while the KDF ran: only the current version counts.
    if (this.records.get(record.definition) !== record) return undefined;
    this.cache.set(digest, record);
    return record;
  }

  private async match(token: string, scope: Scope): Promise<SecretRecord | undefined> {
    const presented = this.parse(token);
    if (presented === undefined) return undefined;
    const candidates: SecretRecord[] = [];
    const usernameDigest = presented.username === undefined ? undefined : this.digest.bytes(presented.username);
    for (const record of this.records.values()) {
      if (scope.names !== undefined && !scope.names.has(record.definition)) continue;
      // Every candidate's username is compared (no early exit), each in constant time.
      if (usernameDigest !== undefined && !(record.usernameDigest !== undefined && safeEqualDigests(usernameDigest, record.usernameDigest))) continue;
      candidates.push(record);
    }
    if (candidates.length === 0) {
      // Same cost as a real check: timing does not tell unknown usernames from wrong passwords.
      await verifySecret(presented.secret, await unknownSecretHash());
      return undefined;
    }
    const results = await Promise.all(candidates.map((r) => verifySecret(presented.secret, r.hash)));
    return candidates[results.indexOf(true)];
  }
}
