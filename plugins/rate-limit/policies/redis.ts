import { createHash } from 'node:crypto';
import { closeRedis, connectRedis, createRedisConnection, deleteKeysUnder, FailureReport, maskRedisUrl } from '../../../sdk/plugin/index.ts';
import type { CounterStore, Decision, DecisionRequest } from './types.ts';

/**
 * The cluster-wide counter store: every node sharing one Redis counts in the same keys.
 *
 * One decision is one Lua script run (EVALSHA, loaded on NOSCRIPT) on one key, so it is atomic
 * however many nodes ask at once. The script is the memory store's decide() line for line, on
 * a hash with the GCRA anchor and count (`a`, `n`) and the cap window's start and count (`ws`,
 * `c`); integers stay exact in Lua's doubles (epoch milliseconds are 13 digits).
 *
 * Time is the caller's clock (ARGV), not Redis's TIME: calendar windows are zone arithmetic that
 * only the node does (Intl), and both must read one clock. Nodes keep NTP time, so a skew of a
 * few milliseconds moves a GCRA slot by as much; an injected clock makes tests exact.
 *
 * A key expires (relative PEXPIRE, so Redis's own clock does not matter) once it holds no
 * information: the bucket refilled and the cap window over, plus a second of grace. Its TTL is
 * only ever lengthened. Correctness never depends on expiry: a stale key reads as refilled.
 */
const SCRIPT = `
local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local ws = tonumber(ARGV[5])
local we = tonumber(ARGV[6])
local grace = tonumber(ARGV[7])
local h = redis.call('HMGET', KEYS[1], 'a', 'n', 'ws', 'c')
local anchor = tonumber(h[1]) or 0
local n = tonumber(h[2]) or 0
local allowed = 1
local remaining = -1
local retry = 0
if rate > 0 then
  local bs = burst * 1000
  local owed = (anchor - now) * rate + n * 1000
  if owed <= 0 then
    anchor = now
    n = 0
  elseif owed > bs then
    anchor = now
    n = burst
    redis.call('HSET', KEYS[1], 'a', string.format('%.0f', anchor), 'n', string.format('%.0f', n))
  end
  local excess = (anchor - now) * rate + (n + 1) * 1000
  if excess <= bs then
    n = n + 1
    remaining = math.floor((bs - excess) / 1000)
  else
    allowed = 0
    remaining = 0
    retry = anchor + math.ceil(((n + 1 - burst) * 1000) / rate)
  end
end
local count = 0
if limit >= 0 then
  if tonumber(h[3]) == ws then count = tonumber(h[4]) or 0 end
  if count < limit then
    local left = limit - count - 1
    if remaining < 0 or left < remaining then remaining = left end
  else
    if allowed == 1 or we > retry then retry = we end
    allowed = 0
    remaining = 0
  end
end
if allowed == 1 then
  local expires = now
  if rate > 0 then
    if n >= rate then
      local seconds = math.floor(n / rate)
      anchor = anchor + seconds * 1000
      n = n - seconds * rate
    end
    redis.call('HSET', KEYS[1], 'a', string.format('%.0f', anchor), 'n', string.format('%.0f', n))
    expires = anchor + math.ceil(n * 1000 / rate)
  end
  if limit >= 0 then
    redis.call('HSET', KEYS[1], 'ws', string.format('%.0f', ws), 'c', string.format('%.0f', count + 1))
    if we > expires then expires = we end
  end
  local ttl = expires - now + grace
  if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], string.format('%.0f', ttl)) end
end
if remaining < 0 then remaining = 0 end
return {allowed, remaining, retry}
`;

const SCRIPT_SHA = createHash('sha1').update(SCRIPT).digest('hex');
const EXPIRY_GRACE_MS = 1000;

export type RedisErrorPolicy = 'allow' | 'deny';

export interface RedisStoreOptions {
  url: string;
  /** Put before every key (`svc:rl:`). */
  keyPrefix: string;
  connectTimeoutMs: number;
  /** How long a decision may take before onError decides instead. */
  timeoutMs: number;
  onError: RedisErrorPolicy;
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /** Each decision that onError took (the metric). */
  onFailure?: (outcome: RedisErrorPolicy) => void;
}

export { maskRedisUrl };

type Reply = [number, number, number];

export class RedisCounterStore implements CounterStore {
  private readonly client;
  private readonly masked: string;
  /** Failures logged at most once per 10 s. */
  private readonly failures: FailureReport;

  constructor(private readonly options: RedisStoreOptions) {
    this.masked = maskRedisUrl(options.url);
    this.client = createRedisConnection(options.url, options.connectTimeoutMs);
    this.failures = new FailureReport((failures, cause) => {
      const verdict = options.onError === 'allow' ? 'admitted uncounted (on_redis_error: allow)' : 'refused with 429 (on_redis_error: deny)';
      options.log.warn({ redis: this.masked, cause, failures }, `rate-limit: Redis cannot decide; requests of redis-policy rule sets are ${verdict}`);
    });
    this.client.on('error', (err: Error) => this.failures.failed(`connection: ${err.message}`));
    this.client.on('ready', () => {
      if (this.failures.recovered()) options.log.info({ redis: this.masked }, 'rate-limit: Redis reachable again; the redis policy counts again');
    });
  }

  /** Resolves once connected, refused, or after the connect timeout (it keeps retrying). */
  connect(): Promise<void> {
    return connectRedis(this.client, this.options.connectTimeoutMs);
  }

  get ready(): boolean {
    return this.client.isReady;
  }

  decide(key: string, req: DecisionRequest, out: Decision): Promise<Decision> {
    // Read the request now: the limiter reuses it for the next request while this one waits.
    const now = req.now;
    const args = [
      String(now),
      String(req.rate),
      String(req.burst),
      req.limit === Number.POSITIVE_INFINITY ? '-1' : String(req.limit),
      String(req.windowStart),
      String(req.windowEnd),
      String(EXPIRY_GRACE_MS),
    ];
    const fullKey = this.options.keyPrefix + key;
    return new Promise<Decision>((resolve) => {
      let settled = false;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        resolve(this.undecided(out, now, `no answer within ${this.options.timeoutMs} ms`));
      }, this.options.timeoutMs);
      this.run(fullKey, args).then(
        (reply) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          out.allowed = reply[0] === 1;
          out.remaining = reply[1];
          out.retryAtMs = out.allowed ? 0 : reply[2];
          resolve(out);
        },
        (err: Error) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(this.undecided(out, now, err.message));
        },
      );
    });
  }

  private async run(key: string, args: string[]): Promise<Reply> {
    try {
      return await this.client.sendCommand<Reply>(['EVALSHA', SCRIPT_SHA, '1', key, ...args]);
    } catch (err) {
      // A restarted or flushed Redis has forgotten the script: load it once, then run it again.
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      await this.client.sendCommand(['SCRIPT', 'LOAD', SCRIPT]);
      return this.client.sendCommand<Reply>(['EVALSHA', SCRIPT_SHA, '1', key, ...args]);
    }
  }

  /** on_redis_error decides: admit uncounted (fail-open) or refuse for a second (fail-closed). */
  private undecided(out: Decision, now: number, cause: string): Decision {
    const allow = this.options.onError === 'allow';
    out.allowed = allow;
    out.uncounted = allow;
    out.remaining = 0;
    out.retryAtMs = allow ? 0 : now + 1000;
    this.options.onFailure?.(this.options.onError);
    this.failures.failed(cause);
    return out;
  }

  clear(prefix: string): Promise<number> {
    return deleteKeysUnder(this.client, this.options.keyPrefix + prefix);
  }

  close(): Promise<void> {
    return closeRedis(this.client);
  }
}
