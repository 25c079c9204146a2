/**
 * RabbitMQ over AMQP 0-9-1 with publisher confirms: PUBLISHERS channels, each publishing one
 * persistent message and awaiting its confirm before the next (the concurrency of as many HTTP
 * publishers waiting for their answers). amqplib is not a project dependency: it is installed
 * on demand into ~/.cache/svc-bench/amqplib, and only when a broker answers (127.0.0.1:5672,
 * guest/guest, unless BENCH_AMQP_URL says otherwise).
 */
import { createRequire } from 'node:module';
import { connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { cachedPackage, findProcess, metered, processTree, publishBody, SECONDS, versionOf, type Load } from '../lib.ts';

/** The broker; BENCH_AMQP_URL points elsewhere (e.g. a port nothing answers on, to see the skip). */
const BROKER = new URL(process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672');
/** The connections the peers suite spreads its channels over; `publish()` may use fewer. */
const CONNECTIONS = 5;
const QUEUES = { classic: 'svc-bench-classic', quorum: 'svc-bench-quorum' } as const;
export type QueueKind = keyof typeof QUEUES;

// The few amqplib calls used here (its types ship with the package, which the project does not install).
interface ConfirmChannel {
  sendToQueue(queue: string, content: Buffer, options: object, callback: (err: unknown) => void): boolean;
  assertQueue(queue: string, options: object): Promise<unknown>;
  purgeQueue(queue: string): Promise<{ messageCount: number }>;
  deleteQueue(queue: string): Promise<unknown>;
}
interface AmqpConnection {
  connection: { serverProperties: Record<string, unknown> };
  createConfirmChannel(): Promise<ConfirmChannel>;
  close(): Promise<void>;
}

/** How one measurement publishes (defaults: the peers suite's). */
export interface PublishOptions {
  /** AMQP connections the publishers' channels are spread over, 1 to CONNECTIONS (default CONNECTIONS). */
  connections?: number;
  /** The message body (default publishBody('B', true): PUBSUB.message). */
  body?: string;
  /** Seconds of publishing before the measured part (default 1). */
  warmup?: number;
  /** Seconds measured (default SECONDS). */
  seconds?: number;
}

export interface Rabbit {
  server: string;
  client: string;
  publish(kind: QueueKind, publishers: number, opts?: PublishOptions): Promise<Load>;
  /** The broker's processes on this machine (none when it runs elsewhere or cannot be found). */
  pids(): number[];
  close(): Promise<void>;
}

function brokerAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect(Number(BROKER.port || 5672), BROKER.hostname);
    s.setTimeout(2_000, () => (s.destroy(), resolve(false)));
    s.once('connect', () => (s.end(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/** Connected to the local broker, or why not. */
export async function rabbit(): Promise<Rabbit | string> {
  if (!(await brokerAnswers())) return `no broker answers on ${BROKER.host}`;
  const dir = cachedPackage('amqplib', 'amqplib', 'amqplib@2');
  const amqp = createRequire(join(dir, 'package.json'))('amqplib') as { connect(url: string): Promise<AmqpConnection> };
  let conns: AmqpConnection[];
  try {
    conns = await Promise.all(Array.from({ length: CONNECTIONS }, () => amqp.connect(BROKER.href)));
  } catch (err) {
    return `the broker on ${BROKER.host} refused the connection: ${(err as Error).message}`;
  }
  const admin = await conns[0]!.createConfirmChannel();
  const fresh = async () => {
    for (const q of Object.values(QUEUES)) await admin.deleteQueue(q);
    await admin.assertQueue(QUEUES.classic, { durable: true });
    await admin.assertQueue(QUEUES.quorum, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  };
  await fresh();
  // Channels by the number of connections they are spread over (1 and CONNECTIONS: distinct sets).
  const channels = new Map<number, ConfirmChannel[]>();
  const beam = findProcess('beam.smp');
  return {
    server: String(conns[0]!.connection.serverProperties.version ?? 'unknown'),
    client: versionOf(dir),
    async publish(kind, publishers, opts = {}) {
      const spread = Math.min(CONNECTIONS, Math.max(1, opts.connections ?? CONNECTIONS));
      const set = channels.get(spread) ?? [];
      channels.set(spread, set);
      while (set.length < publishers) set.push(await conns[set.length % spread]!.createConfirmChannel());
      const r = await confirmedPublishing(set.slice(0, publishers), QUEUES[kind], beam ? processTree(beam) : [], opts);
      await admin.purgeQueue(QUEUES[kind]);
      return r;
    },
    pids: () => (beam ? processTree(beam) : []),
    async close() {
      for (const q of Object.values(QUEUES)) await admin.deleteQueue(q);
      for (const c of conns) await c.close();
    },
  };
}

/** Each channel publishes and awaits the confirm, in a loop: a warm-up (1 s), then the measured seconds (SECONDS). */
async function confirmedPublishing(channels: ConfirmChannel[], queue: string, brokerPids: number[], opts: PublishOptions): Promise<Load> {
  const seconds = opts.seconds ?? SECONDS;
  const body = Buffer.from(opts.body ?? publishBody('B', true));
  const options = { persistent: true, contentType: 'application/json' };
  const latencies: number[] = [];
  let measuring = false;
  let running = true;
  const publisher = async (ch: ConfirmChannel) => {
    while (running) {
      const start = performance.now();
      await new Promise<void>((resolve, reject) => ch.sendToQueue(queue, body, options, (err) => (err ? reject(err) : resolve())));
      if (measuring) latencies.push(performance.now() - start);
    }
  };
  const all = Promise.all(channels.map(publisher));
  await new Promise((r) => setTimeout(r, (opts.warmup ?? 1) * 1_000));
  const { cost } = await metered(
    brokerPids,
    async () => {
      measuring = true;
      await new Promise((r) => setTimeout(r, seconds * 1_000));
      measuring = false;
    },
    () => latencies.length,
  );
  running = false;
  await all;
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 10) / 10;
  return { rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99), non2xx: 0, errors: 0, ...(brokerPids.length ? { cost } : {}) };
}
