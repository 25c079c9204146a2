import { createHash } from 'node:crypto';
import { closeRedis, connectRedis, createRedisConnection, deleteKeysUnder, FailureReport, isRedisErrorReply, maskRedisUrl, SvcError, type RedisConnection } from '../../../sdk/plugin/index.ts';
import type { CacheBackend } from './backend.ts';

/**
 * incr in one step: INCRBY, then the time to live only if the key has none yet (PTTL -1: just
 * created by INCRBY), so a counter keeps the expiry of its window. A sum past 2^53 is undone and
 * refused: services read numbers as doubles. The sum comes back as text: Redis turns a Lua number
 * near 2^53 into an integer reply one off.
 */
const INCR_SCRIPT = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n > 9007199254740991 or n < -9007199254740991 then
  redis.call('DECRBY', KEYS[1], ARGV[1])
  return redis.error_reply('SVC_RANGE incr would take the value past 2^53')
end
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return string.format('%.0f', n)
`;
const INCR_SHA = createHash('sha1').update(INCR_SCRIPT).digest('hex');

export interface RedisCacheOptions {
  /** The cache's name, for messages and logs. */
  name: string;
  url: string;
  /** Put before every key: the cache's own namespace (`svc:cache:sessions:`). */
  keyPrefix: string;
  connectTimeoutMs: number;
  /** How long one command may take before the caller gets SERVICE_UNAVAILABLE. */
  timeoutMs: number;
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

/** Redis has not (or no longer) loaded the incr script. */
class NoScript extends Error {}

/**
 * A cache every node shares: entries in Redis under the cache's prefix, their time to live kept by
 * Redis (SET PX), incr atomic (one script). While Redis is down or slower than `timeoutMs`, calls
 * fail at once with SERVICE_UNAVAILABLE; the connection comes back by itself, and failures are
 * logged at most once per 10 s.
 */
export class RedisCache implements CacheBackend {
  readonly kind = 'redis';
  private readonly client: RedisConnection;
  private readonly failures: FailureReport;

  constructor(private readonly options: RedisCacheOptions) {
    const fields = { cache: options.name, redis: maskRedisUrl(options.url) };
    this.client = createRedisConnection(options.url, options.connectTimeoutMs);
    this.failures = new FailureReport((failures, cause) => options.log.warn({ ...fields, cause, failures }, 'cache: Redis cannot answer; calls on this cache fail with ServiceUnavailable'));
    this.client.on('error', (err: Error) => this.failures.failed(`connection: ${err.message}`));
    this.client.on('ready', () => {
      if (this.failures.recovered()) options.log.info(fields, 'cache: Redis reachable again');
    });
  }

  /** Resolves once connected, refused, or after the connect timeout (it keeps retrying). */
  connect(): Promise<void> {
    return connectRedis(this.client, this.options.connectTimeoutMs);
  }

  get ready(): boolean {
    return this.client.isReady;
  }

  async get(key: string): Promise<string | undefined> {
    const text = await this.send(() => this.client.sendCommand<string | null>(['GET', this.options.keyPrefix + key]));
    return text ?? undefined;
  }

  async set(key: string, text: string, ttlMs: number): Promise<void> {
    await this.send(() => this.client.sendCommand(['SET', this.options.keyPrefix + key, text, 'PX', String(ttlMs)]));
  }

  async delete(key: string): Promise<boolean> {
    return (await this.send(() => this.client.sendCommand<number>(['DEL', this.options.keyPrefix + key]))) > 0;
  }

  async incr(key: string, by: number, ttlMs: number): Promise<number> {
    const args = ['1', this.options.keyPrefix + key, String(by), String(ttlMs)];
    try {
      return Number(await this.send(() => this.client.sendCommand<string>(['EVALSHA', INCR_SHA, ...args])));
    } catch (err) {
      // A restarted or flushed Redis has forgotten the script: EVAL sends it along (and loads it).
      if (err instanceof NoScript) return Number(await this.send(() => this.client.sendCommand<string>(['EVAL', INCR_SCRIPT, ...args])));
      throw err;
    }
  }

  /** An operator's clear or purge, not a request's: it may take as long as the SCAN takes. */
  clear(prefix: string): Promise<number> {
    return deleteKeysUnder(this.client, this.options.keyPrefix + prefix).catch((err: Error) => Promise.reject(this.refusal(err)));
  }

  size(): undefined {
    return undefined;
  }

  close(): Promise<void> {
    return closeRedis(this.client);
  }

  /** A command within the time limit (then SERVICE_UNAVAILABLE), its failures told apart by refusal(). */
  private send<T>(command: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(this.unavailable(`no answer within ${this.options.timeoutMs} ms`)), this.options.timeoutMs);
      command().then(
        (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        (err: Error) => {
          clearTimeout(timer);
          reject(this.refusal(err));
        },
      );
    });
  }

  /**
   * What a failed command means to the caller: incr on a value that is no integer is its own fault
   * (BAD_REQUEST); NOSCRIPT goes back to incr, which sends the script; anything else, Redis
   * refusing (out of memory, a read-only replica) or not answering, is SERVICE_UNAVAILABLE.
   */
  private refusal(err: Error): Error {
    if (!isRedisErrorReply(err)) return this.unavailable(err.message);
    if (err.message.startsWith('NOSCRIPT')) return new NoScript(err.message);
    if (err.message.includes('SVC_RANGE')) return new SvcError('BAD_REQUEST', `incr would take the value past ${Number.MAX_SAFE_INTEGER}`);
    if (err.message.includes('not an integer')) return new SvcError('BAD_REQUEST', 'incr needs a value that is an integer');
    return this.unavailable(err.message);
  }

  private unavailable(cause: string): SvcError {
    this.failures.failed(cause);
    return new SvcError('SERVICE_UNAVAILABLE', `Cache '${this.options.name}' is unavailable (its Redis does not answer)`);
  }
}
