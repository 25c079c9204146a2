/**
 * Durable publish beside RabbitMQ: svc variant A (`has_gd: true`) and B, 50 publishers each
 * waiting for its answer (fsynced before it), alone and with one getter draining concurrently;
 * RabbitMQ with publisher confirms on a classic durable and a quorum queue. Rounds interleaved,
 * medians reported; ratios against the quorum queue. A second table runs the same cases with each
 * server on one core and the load generator on another, where the machine allows pinning.
 */
import { drain, getter, getterLoop, load, median, onOwnCores, printGrid, processTree, PUBSUB, publishBody, publishRequest, rounds, roundSpread, startSvcCli, type Load } from '../lib.ts';
import type { QueueKind, Rabbit } from './rabbitmq.ts';

const PUBLISHERS = 50;
/** BENCH_PUBLISH_BYTES=106: every body that long, svc's and RabbitMQ's (publishBody); default PUBSUB.message as it is (74 bytes, A's 88). */
const BYTES = process.env.BENCH_PUBLISH_BYTES ? Number(process.env.BENCH_PUBLISH_BYTES) : undefined;

interface Result {
  l: Load;
  /** Messages per second the getter took during the measured part (getter rows). */
  delivered?: number;
}

interface Case {
  name: string;
  note: string;
  run: () => Promise<Result>;
  /** The getter rows name the row they are held against (the same variant publishing alone). */
  alone?: string;
}

/** The baseline: 50 confirm channels on one connection, as one amqplib client process publishes (issue 45). */
const QUORUM = 'RabbitMQ, quorum queue, confirms, 1 connection';

/** How one publish measurement runs, when not as the peers suite does (bench/peers/publish-outside.ts). */
export interface PublishRun {
  /** Body length in bytes (publishBody); default PUBSUB.message as it is. */
  bytes?: number;
  /** Seconds of warm-up (default 1) and measured (default SECONDS). */
  warmup?: number;
  seconds?: number;
}

/**
 * One measurement of durable publish with no getter: PUBLISHERS publishers to /bench/pub (ep.bench's
 * subscription), which is emptied afterwards so the next round starts from an empty queue.
 */
export async function publishAlone(svc: { url: string; pid: number }, variant: 'A' | 'B', run: PublishRun = {}): Promise<Load> {
  const { url, ...req } = publishRequest(svc.url, variant, true, '/bench/pub', run.bytes);
  const l = await load(url, { ...req, connections: PUBLISHERS, ...(run.seconds ? { duration: run.seconds } : {}) }, { pids: processTree(svc.pid), ...(run.warmup ? { warmup: run.warmup } : {}) });
  await drain(getter(svc.url, 'A', PUBSUB.publisher, '/bench/pub'));
  return l;
}

/**
 * The rows: svc alone and with a getter (both variants), then RabbitMQ's queues (`kinds`).
 * Messages published without a getter go to ep.bench's subscription of /bench/pub, emptied after
 * each measurement; with a getter to /bench/flow, which ep.reader's getter drains as they come.
 */
function publishCases(svc: { url: string; pid: number }, rabbit: Rabbit | string, kinds: readonly QueueKind[]): Case[] {
  const alone = (variant: 'A' | 'B') => async (): Promise<Result> => ({ l: await publishAlone(svc, variant, BYTES === undefined ? {} : { bytes: BYTES }) });
  const withGetter = (variant: 'A' | 'B') => async (): Promise<Result> => {
    const { url, ...req } = publishRequest(svc.url, variant, true, '/bench/flow', BYTES);
    const get = getter(svc.url, variant, PUBSUB.reader, '/bench/flow');
    const loop = getterLoop(get);
    let started = 0;
    let before = 0;
    const l = await load(url, { ...req, connections: PUBLISHERS }, { pids: processTree(svc.pid), onMeasure: () => ((started = performance.now()), (before = loop.taken())) });
    const delivered = (loop.taken() - before) / ((performance.now() - started) / 1000);
    await loop.stop();
    await drain(get);
    return { l, delivered };
  };
  const brokerCases = (broker: Rabbit): Record<QueueKind, Case[]> => {
    const body = BYTES === undefined ? undefined : publishBody('B', true, BYTES);
    const amqp = (kind: QueueKind, connections: number, name: string): Case => ({
      name,
      note: `AMQP, ${PUBLISHERS} channels on ${connections} connection${connections > 1 ? 's' : ''}, persistent`,
      run: async () => ({ l: await broker.publish(kind, PUBLISHERS, { connections, ...(body ? { body } : {}) }) }),
    });
    return {
      classic: [amqp('classic', 1, 'RabbitMQ, classic durable queue, confirms, 1 connection')],
      // Until issue 45 the suite spread the channels over 5 connections, which costs the broker more per message.
      quorum: [amqp('quorum', 1, QUORUM), amqp('quorum', 5, 'RabbitMQ, quorum queue, confirms, 5 connections')],
    };
  };
  return [
    { name: 'svc variant A publish, `has_gd: true`', note: 'HTTP, Basic Auth', run: alone('A') },
    { name: 'svc variant B publish (always GD)', note: 'HTTP, Basic Auth', run: alone('B') },
    { name: 'svc variant A publish + 1 getter draining', note: 'getter: PATCH of the subscription in a loop', run: withGetter('A'), alone: 'svc variant A publish, `has_gd: true`' },
    { name: 'svc variant B publish + 1 getter draining', note: 'getter: POST /pubsub/messages/get in a loop', run: withGetter('B'), alone: 'svc variant B publish (always GD)' },
    ...(typeof rabbit === 'string' ? [] : kinds.flatMap((kind) => brokerCases(rabbit)[kind])),
  ];
}

function printPublishTable(title: string, cases: Case[], results: Result[][]): void {
  const at = (name: string) => cases.findIndex((c) => c.name === name);
  const rate = (i: number) => median(results[i]!.map((r) => r.l.rps));
  const q = at(QUORUM);
  const quorum = q >= 0 ? rate(q) : undefined;
  const rows = cases.map((c, i) => {
    const ls = results[i]!.map((r) => r.l);
    const m = (f: (l: Load) => number) => median(ls.map(f));
    const cost = (f: (l: Load) => number) => (ls[0]!.cost ? m(f).toFixed(0) : '');
    const errs = ls.reduce((n, l) => n + l.non2xx + l.errors, 0);
    const getterNote = c.alone
      ? `; vs no getter ${(rate(i) / rate(at(c.alone))).toFixed(2)}; getter took ${Math.round(median(results[i]!.map((r) => r.delivered!)))} msg/s; CPU includes the getter's requests`
      : '';
    return [
      c.name,
      String(Math.round(rate(i))),
      quorum ? (rate(i) / quorum).toFixed(2) : '',
      quorum && i !== q ? roundSpread(ls.map((l) => l.rps), results[q]!.map((r) => r.l.rps)) : '',
      String(m((l) => l.p50)),
      String(m((l) => l.p99)),
      ls[0]!.cost ? `${m((l) => l.cost!.serverUs).toFixed(0)} (${m((l) => l.cost!.mainUs).toFixed(0)})` : '',
      cost((l) => l.cost!.loaderUs),
      cost((l) => l.cost!.rssMb),
      c.note + getterNote + (ls[0]!.cost ? `; other load ${m((l) => l.cost!.otherCores).toFixed(2)} cores` : '') + (errs ? `; non-2xx + errors: ${errs}` : ''),
    ];
  });
  printGrid(title, ['case', 'msg/s', 'vs RabbitMQ quorum', 'vs quorum, one round (lowest–highest)', 'p50 ms', 'p99 ms', 'server CPU µs/msg (main process)', 'load-gen CPU µs/msg', 'RSS load MB', 'note'], rows);
}

export async function durablePublish(rabbit: Rabbit | string): Promise<void> {
  const svc = await startSvcCli(PUBSUB.config, {}, '/svc/pubsub/openapi.json');
  try {
    const shared = publishCases(svc, rabbit, ['classic', 'quorum']);
    const results = await rounds(shared.map((c) => c.run));
    printPublishTable(`Peers: durable publish, ${PUBLISHERS} publishers each awaiting its answer (medians of ${results[0]!.length} interleaved rounds)`, shared, results);
    if (typeof rabbit === 'string') {
      console.log(`\nRabbitMQ rows skipped: ${rabbit.replace(/\.$/, '')}.`);
      return;
    }
    // The same cases with the load generator off the servers' core: what a machine whose load
    // generator has cores of its own shows, and each server's rate on one core.
    const own = publishCases(svc, rabbit, ['quorum']);
    const pinned = await onOwnCores([...processTree(svc.pid), ...rabbit.pids()], () => rounds(own.map((c) => c.run)));
    if (typeof pinned === 'string') console.log(`\nThe one-core rows are skipped: ${pinned}.`);
    else printPublishTable(`Peers: durable publish, each server on CPU 0 and the load generator on another (medians of ${pinned[0]!.length} interleaved rounds)`, own, pinned);
  } finally {
    await svc.stop();
  }
}
