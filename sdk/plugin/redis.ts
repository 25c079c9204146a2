import type * as Redis from 'redis';
import { onFirstUse } from './lazy.ts';

/**
 * A Redis connection as plugins that keep shared state there hold one (the rate limit's redis
 * policy, named caches): commands fail at once while it is down instead of queueing (a request
 * must not wait for Redis to come back), it reconnects by itself with backoff, and an idle one is
 * PINGed so that a Redis `timeout` or a NAT does not drop it unnoticed. Plus what such a plugin
 * logs: the URL with its password masked, and failures at most once per interval.
 */

export type RedisConnection = ReturnType<typeof Redis.createClient>;

/** The client library (some 650 modules), loaded by the first connection. */
const redis = onFirstUse<typeof Redis>(import.meta.url, 'redis');
let connected = false;

/** How long a reconnect waits after `retries` failed attempts: 100 ms doubling, at most 5 s. */
const backoff = (retries: number) => Math.min(100 * 2 ** retries, 5000);
/** PING this often on an idle connection. */
const PING_EVERY_MS = 30_000;

export function createRedisConnection(url: string, connectTimeoutMs: number): RedisConnection {
  connected = true;
  return redis().createClient({ url, disableOfflineQueue: true, pingInterval: PING_EVERY_MS, socket: { connectTimeout: connectTimeoutMs, reconnectStrategy: backoff } });
}

/**
 * Starts connecting; resolves once connected, refused, or after the connect timeout, whichever
 * comes first (an unreachable Redis must not hold the server's start: the client keeps retrying).
 */
export async function connectRedis(client: RedisConnection, connectTimeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let settle: () => void = () => undefined;
  const first = new Promise<void>((resolve) => {
    settle = resolve;
    timer = setTimeout(resolve, connectTimeoutMs);
    client.once('ready', resolve);
    client.once('error', resolve);
  });
  client.connect().catch(() => undefined);
  await first;
  clearTimeout(timer);
  client.off('ready', settle).off('error', settle);
}

/** Redis answered the command with an error (a wrong type, a script's error), as opposed to the connection failing. */
export function isRedisErrorReply(err: unknown): boolean {
  return connected && err instanceof redis().ErrorReply;
}

/** Waits a moment for commands in flight, then lets go of the connection whatever Redis does. */
export async function closeRedis(client: RedisConnection): Promise<void> {
  if (!client.isOpen) return;
  if (!client.isReady) return client.destroy();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, 1000)));
  await Promise.race([client.close().catch(() => undefined), late]);
  clearTimeout(timer);
  if (client.isOpen) client.destroy();
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

/**
 * Failures of a shared store, reported without flooding the log: `report` runs for the first
 * failure and then at most once per interval, with how many failures it stands for and the latest
 * cause; `recovered()` is true once after failures, when the connection works again.
 */
export class FailureReport {
  private failing = false;
  private unreported = 0;
  private lastReported = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly report: (failures: number, cause: string) => void,
    private readonly everyMs = 10_000,
  ) {}

  failed(cause: string): void {
    this.failing = true;
    this.unreported++;
    const at = performance.now();
    if (at - this.lastReported < this.everyMs) return;
    this.lastReported = at;
    this.report(this.unreported, cause);
    this.unreported = 0;
  }

  recovered(): boolean {
    if (!this.failing) return false;
    this.failing = false;
    return true;
  }
}

/** Deletes every key that starts with `prefix` (SCAN, then UNLINK; glob characters in it taken literally); resolves how many. */
export async function deleteKeysUnder(client: RedisConnection, prefix: string): Promise<number> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  let cursor = '0';
  let dropped = 0;
  do {
    const [next, keys] = await client.sendCommand<[string, string[]]>(['SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000']);
    if (keys.length > 0) dropped += await client.sendCommand<number>(['UNLINK', ...keys]);
    cursor = next;
  } while (cursor !== '0');
  return dropped;
}
