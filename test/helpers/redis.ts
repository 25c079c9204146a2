import { randomBytes } from 'node:crypto';
import { createServer, connect } from 'node:net';
import { createClient } from 'redis';

/**
 * The Redis the redis-policy tests share (SVC_TEST_REDIS, else 127.0.0.1:6379). With CI=true a
 * missing Redis fails the suite (those tests must run); elsewhere they are skipped, saying why.
 */
export const TEST_REDIS_URL = process.env.SVC_TEST_REDIS ?? 'redis://127.0.0.1:6379';

function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port || 6379) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    // A Redis answers PING with +PONG; any other listener is not one.
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (chunk) => done(chunk.toString().startsWith('+PONG')));
  });
}

/** Whether to run; throws under CI when Redis is missing, warns (once per file) when skipping. */
export async function redisForTests(file: string): Promise<boolean> {
  if (await reachable(TEST_REDIS_URL)) return true;
  if (process.env.CI === 'true') throw new Error(`${file}: CI=true but no Redis answers at ${TEST_REDIS_URL}; the redis-policy tests must run in CI`);
  console.warn(`${file}: skipped, no Redis at ${TEST_REDIS_URL} (set SVC_TEST_REDIS, or start one; with CI=true they fail instead)`);
  return false;
}

/** A key prefix no other test (or run) uses. */
export function uniquePrefix(): string {
  return `svc:test:${randomBytes(6).toString('hex')}:`;
}

/** Deletes every key under the prefix (after a test). */
export async function dropKeys(prefix: string): Promise<void> {
  const client = createClient({ url: TEST_REDIS_URL });
  client.on('error', () => undefined);
  await client.connect();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.sendCommand<[string, string[]]>(['SCAN', cursor, 'MATCH', `${prefix}*`, 'COUNT', '1000']);
      if (keys.length) await client.sendCommand(['UNLINK', ...keys]);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    await client.close();
  }
}

/** Keys under the prefix, with their TTLs in ms. */
export async function keysUnder(prefix: string): Promise<Map<string, number>> {
  const client = createClient({ url: TEST_REDIS_URL });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const out = new Map<string, number>();
    let cursor = '0';
    do {
      const [next, keys] = await client.sendCommand<[string, string[]]>(['SCAN', cursor, 'MATCH', `${prefix}*`, 'COUNT', '1000']);
      for (const key of keys) out.set(key, await client.sendCommand<number>(['PTTL', key]));
      cursor = next;
    } while (cursor !== '0');
    return out;
  } finally {
    await client.close();
  }
}

/** Runs a raw command on the test Redis (SCRIPT FLUSH and the like). */
export async function redisCommand(args: string[]): Promise<unknown> {
  const client = createClient({ url: TEST_REDIS_URL });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await client.sendCommand(args);
  } finally {
    await client.close();
  }
}

/** A URL where nothing listens: a port that was free a moment ago. */
export async function closedRedisUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `redis://:not-this-password@127.0.0.1:${port}`;
}

/** A real TCP proxy to the test Redis whose answers can be held back, and whose connections can be cut (Redis "down" while a server runs). */
export interface RedisProxy {
  url: string;
  /** Answers wait until release() (Redis too slow). */
  hold(): void;
  /** Sends what was held and passes answers on again. */
  release(): void;
  /** Refuses new connections and cuts the open ones (Redis down), until up(). */
  down(): void;
  up(): void;
  close(): Promise<void>;
}

export async function redisProxy(): Promise<RedisProxy> {
  const target = new URL(TEST_REDIS_URL);
  let holding = false;
  let refusing = false;
  const held: Array<() => void> = [];
  const open = new Set<() => void>();
  const proxy = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = connect(Number(target.port || 6379), target.hostname);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => void (holding ? held.push(() => client.write(chunk)) : client.write(chunk)));
    const end = () => {
      open.delete(end);
      client.destroy();
      upstream.destroy();
    };
    open.add(end);
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    hold: () => void (holding = true),
    release: () => {
      holding = false;
      for (const send of held.splice(0)) send();
    },
    down: () => {
      refusing = true;
      for (const end of [...open]) end();
    },
    up: () => void (refusing = false),
    close: () => {
      for (const end of [...open]) end();
      return new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}
