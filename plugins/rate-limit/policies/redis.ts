import { createHash } from 'node:crypto';
import { createClient } from 'redis';
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
const LOG_EVERY_MS = 10_000;

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

/** The URL as it may be logged: a password (or a lone user token) is masked. */
export function maskRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    else if (u.username) u.username = '***';
    return u.toString();
  } catch {
    return 'redis://(unparsable URL)';
  }
}

/** SCAN MATCH pattern for keys starting with `prefix` (glob characters in names taken literally). */
function prefixPattern(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
}

type Reply = [number, number, number];

export class RedisCounterStore implements CounterStore {
  private readonly client;
  private readonly masked: string;
  /** Failures since the last warning line, and when that line was written (log at most every 10 s). */
  private unlogged = 0;
  private lastLogged = Number.NEGATIVE_INFINITY;
  private failing = false;

  constructor(private readonly options: RedisStoreOptions) {
    this.masked = maskRedisUrl(options.url);
    this.client = createClient({
      url: options.url,
      // Fail fast while disconnected: a queued command would hold its request until Redis returns.
      disableOfflineQueue: true,
      socket: {
        connectTimeout: options.connectTimeoutMs,
        reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 5000),
      },
    });
    this.client.on('error', (err: Error) => this.failed(`connection: ${err.message}`));
    this.client.on('ready', () => {
      if (!this.failing) return;
      this.failing = false;
      options.log.info({ redis: this.masked }, 'rate-limit: Redis reachable again; the redis policy counts again');
    });
  }

  /**
   * Starts connecting; resolves once connected, refused, or after the connect timeout, whichever
   * comes first (an unreachable Redis must not hold the server's start: it keeps retrying).
   */
  async connect(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let settle: () => void = () => undefined;
    const first = new Promise<void>((resolve) => {
      settle = resolve;
      timer = setTimeout(resolve, this.options.connectTimeoutMs);
      this.client.once('ready', resolve);
      this.client.once('error', resolve);
    });
    this.client.connect().catch(() => undefined);
    await first;
    clearTimeout(timer);
    this.client.off('ready', settle).off('error', settle);
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
    this.failed(cause);
    return out;
  }

  private failed(cause: string): void {
    this.failing = true;
    this.unlogged++;
    const at = performance.now();
    if (at - this.lastLogged < LOG_EVERY_MS) return;
    this.lastLogged = at;
    const verdict = this.options.onError === 'allow' ? 'admitted uncounted (on_redis_error: allow)' : 'refused with 429 (on_redis_error: deny)';
    this.options.log.warn(
      { redis: this.masked, cause, failures: this.unlogged },
      `rate-limit: Redis cannot decide; requests of redis-policy rule sets are ${verdict}`,
    );
    this.unlogged = 0;
  }

  async clear(prefix: string): Promise<number> {
    const pattern = prefixPattern(this.options.keyPrefix + prefix);
    let cursor = '0';
    let dropped = 0;
    do {
      const [next, keys] = await this.client.sendCommand<[string, string[]]>(['SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000']);
      if (keys.length > 0) dropped += await this.client.sendCommand<number>(['UNLINK', ...keys]);
      cursor = next;
    } while (cursor !== '0');
    return dropped;
  }

  /** Waits a moment for commands in flight, then lets go of the connection whatever Redis does. */
  async close(): Promise<void> {
    if (!this.client.isOpen) return;
    if (!this.client.isReady) return this.client.destroy();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, 1000)));
    await Promise.race([this.client.close().catch(() => undefined), late]);
    clearTimeout(timer);
    if (this.client.isOpen) this.client.destroy();
  }
}
