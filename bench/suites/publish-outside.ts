import { median, printGrid, processTree, PUBSUB, publishBody, rounds, startSvcCli, type Load } from '../lib.ts';
import { publishAlone } from '../peers/publish.ts';
import { rabbit, type QueueKind } from '../peers/rabbitmq.ts';
import { tenantNode } from './tenants.ts';

/**
 * Issue 45: durable publish measured the way the independent benchmark did, beside the peers
 * suite's way (bench/README.md, Peers). 50 publishers; a 106-byte JSON body in every case; svc
 * started through the CLI (Basic Auth of a pub/sub endpoint, autocannon in this process, 50
 * keep-alive connections); RabbitMQ with amqplib, 50 confirm channels on ONE connection; 2 s of
 * warm-up and 6 s measured per round, BENCH_ROUNDS (3) interleaved rounds, medians. Server CPU
 * is that of every process of the server: svc's kernel and its children (sandbox processes,
 * esbuild), the broker's beam.smp and its children (erl_child_setup, inet_gethost); for svc also
 * the part of it on the kernel's event-loop thread, the one a publish cannot spread over cores.
 * BENCH_OUTSIDE_ALL=1 adds the peers suite's own ways beside (5 AMQP connections, svc's
 * 74/88-byte bodies, 1 s + 5 s) to tell which difference moves what. Under Node 20 (end of life
 * since 2026-04-30, the machine's own) the same server also runs on Node 24, an LTS line, from
 * scripts/node-line.sh, in the same interleaved rounds (BENCH_OUTSIDE_NODE24=0 leaves it out).
 */
const PUBLISHERS = 50;
const BYTES = 106;
const WARMUP = Number(process.env.BENCH_OUTSIDE_WARMUP ?? 2);
const SECONDS = Number(process.env.BENCH_OUTSIDE_SECONDS ?? 6);

interface Case {
  name: string;
  run: () => Promise<Load>;
  quorum?: boolean;
}

export async function run(): Promise<void> {
  const broker = await rabbit();
  if (typeof broker === 'string') {
    console.log(`\npublish-outside: skipped, ${broker}.`);
    return;
  }
  const svc = await startSvcCli(PUBSUB.config, {}, '/svc/pubsub/openapi.json');
  const major = Number(process.versions.node.split('.')[0]);
  const node24 = major < 22 && process.env.BENCH_OUTSIDE_NODE24 !== '0' ? tenantNode() : undefined;
  const svc24 = node24 ? await startSvcCli(PUBSUB.config, {}, '/svc/pubsub/openapi.json', undefined, {}, node24) : undefined;
  try {
    const outside = { bytes: BYTES, warmup: WARMUP, seconds: SECONDS };
    const amqp = (kind: QueueKind, connections: number, body: string | undefined, timing: { warmup?: number; seconds?: number }) => () =>
      broker.publish(kind, PUBLISHERS, { connections, ...(body ? { body } : {}), ...timing });
    const cases: Case[] = [
      { name: 'svc variant B publish', run: () => publishAlone(svc, 'B', outside) },
      { name: 'svc variant A publish, `has_gd: true`', run: () => publishAlone(svc, 'A', outside) },
      ...(svc24
        ? [
            { name: 'svc variant B publish, Node 24', run: () => publishAlone(svc24, 'B', outside) },
            { name: 'svc variant A publish, `has_gd: true`, Node 24', run: () => publishAlone(svc24, 'A', outside) },
          ]
        : []),
      { name: 'RabbitMQ quorum queue, confirms, 1 connection', run: amqp('quorum', 1, publishBody('B', true, BYTES), outside), quorum: true },
      { name: 'RabbitMQ classic durable queue, confirms, 1 connection', run: amqp('classic', 1, publishBody('B', true, BYTES), outside) },
    ];
    if (process.env.BENCH_OUTSIDE_ALL === '1') {
      cases.push(
        { name: 'RabbitMQ quorum queue, confirms, 5 connections (peers suite)', run: amqp('quorum', 5, publishBody('B', true, BYTES), outside) },
        { name: 'svc variant B, 74-byte body, 1 s + 5 s (peers suite)', run: () => publishAlone(svc, 'B', { warmup: 1, seconds: 5 }) },
        { name: 'RabbitMQ quorum, 5 connections, 74-byte body, 1 s + 5 s (peers suite)', run: amqp('quorum', 5, undefined, { warmup: 1, seconds: 5 }) },
      );
    }
    const results = await rounds(cases.map((c) => c.run));
    const q = cases.findIndex((c) => c.quorum);
    const rows = cases.map((c, i) => {
      const ls = results[i]!;
      const m = (f: (l: Load) => number) => median(ls.map(f));
      const ratios = ls.map((l, r) => l.rps / results[q]![r]!.rps);
      return [
        c.name,
        ls.map((l) => Math.round(l.rps)).join(' / '),
        String(Math.round(m((l) => l.rps))),
        i === q ? '1.00' : `${median(ratios).toFixed(2)} (${ratios.map((x) => x.toFixed(2)).join(' ')})`,
        ls.map((l) => l.cost!.serverUs.toFixed(0)).join(' / '),
        `${m((l) => l.cost!.serverUs).toFixed(0)} (${m((l) => l.cost!.mainUs).toFixed(0)})`,
        // The broker's work runs on its scheduler threads, not its main thread: no such figure.
        c.name.startsWith('svc') ? m((l) => l.cost!.loopUs).toFixed(0) : '—',
        m((l) => l.cost!.loaderUs).toFixed(0),
        m((l) => l.cost!.otherCores).toFixed(2),
      ];
    });
    printGrid(
      `Durable publish measured as the independent benchmark did (issue 45): ${PUBLISHERS} publishers, ${BYTES}-byte JSON, ${WARMUP} s + ${SECONDS} s × ${results[0]!.length} interleaved rounds; svc on Node ${process.versions.node}${svc24 ? ` and ${node24}` : ''}, pids ${processTree(svc.pid).length}, broker pids ${broker.pids().length}`,
      ['case', 'msg/s per round', 'median msg/s', 'vs quorum (each round)', 'server CPU µs/msg per round', 'median (main process)', 'of it svc\'s event loop', 'load-gen µs/msg', 'other load cores'],
      rows,
    );
  } finally {
    await svc.stop();
    await svc24?.stop();
    await broker.close();
  }
}
