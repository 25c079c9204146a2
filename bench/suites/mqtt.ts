import { randomBytes } from 'node:crypto';
import { connect, type MqttClient } from 'mqtt';
import { freePort, median, metered, printGrid, processTree, roundSpread, rounds, startSvcCli } from '../lib.ts';

/**
 * MQTT consume (issue 41): messages published at QoS 1 to a channel_mqtt that runs a trivial
 * service, acknowledged after it, against a bare mqtt.js subscriber at QoS 1 in this process
 * (acknowledging on receipt), the baseline. Each round publishes BENCH_MQTT_MESSAGES messages at
 * once and times until the consumer has them all; interleaved rounds, medians. The broker is
 * SVC_BENCH_MQTT, else mqtt://127.0.0.1:1883.
 */
const BROKER = process.env.SVC_BENCH_MQTT ?? 'mqtt://127.0.0.1:1883';
// Mosquitto keeps at most 1000 messages queued for a client by default (max_queued_messages) and drops the rest.
const MESSAGES = Number(process.env.BENCH_MQTT_MESSAGES ?? 500);
const PREFIX = `svc-bench/${randomBytes(4).toString('hex')}`;
const BODY = JSON.stringify({ sensor: 7, c: 21.5, at: '2026-11-28T12:00:00Z' });

async function client(options: Record<string, unknown> = {}): Promise<MqttClient> {
  const c = connect(BROKER, { reconnectPeriod: 0, ...options });
  await new Promise<void>((resolve, reject) => (c.once('connect', () => resolve()), c.once('error', reject)));
  return c;
}

async function consumed(admin: string): Promise<number> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('svc_connector_operations_total{') && l.includes('kind="mqtt"') && l.includes('operation="consume"') && l.includes('outcome="ok"'));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** Polls every 25 ms (reading /metrics costs the server too); gives up after two minutes. */
async function until(done: () => Promise<boolean> | boolean): Promise<void> {
  const end = performance.now() + 120_000;
  while (!(await done())) {
    if (performance.now() > end) throw new Error('mqtt bench: the consumer did not get every message (dropped by the broker?)');
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function run(): Promise<void> {
  const adminPort = await freePort();
  const admin = `http://127.0.0.1:${adminPort}`;
  const config = {
    server: { sandbox: { workers: 1 } },
    mqtt_connection: [],
    channel_mqtt: [{ name: 'bench', url: BROKER, client_id: `${PREFIX.replace('/', '-')}-svc`, clean_session: true, topics: [`${PREFIX}/svc`], service: 'noop' }],
    channel_rest: [{ name: 'ping', url_path: '/ping', service: 'noop', security: 'none' }],
  };
  const svc = await startSvcCli(config, { 'noop.ts': "import { service } from 'svc/sdk';\nexport default service({ handle: () => ({}) });\n" }, '/ping', undefined, { SVC_ADMIN_PORT: String(adminPort) });
  const publisher = await client();
  const bare = await client({ clean: true });
  let bareCount = 0;
  bare.on('message', () => bareCount++);
  await bare.subscribeAsync(`${PREFIX}/bare`, { qos: 1 });
  try {
    await until(() => fetch(`${admin}/ready`).then((r) => r.ok, () => false));
    const pids = processTree(svc.pid);
    const burst = async (topic: string, count: () => Promise<number> | number, measuredPids: number[]) => {
      const before = await count();
      const { result: seconds, cost } = await metered(
        measuredPids,
        async () => {
          const start = performance.now();
          await Promise.all(Array.from({ length: MESSAGES }, () => publisher.publishAsync(topic, BODY, { qos: 1 })));
          await until(async () => (await count()) - before >= MESSAGES);
          return (performance.now() - start) / 1000;
        },
        () => MESSAGES,
      );
      return { rate: MESSAGES / seconds, us: cost.serverUs, loaderUs: cost.loaderUs };
    };
    const [base, chan] = await rounds([() => burst(`${PREFIX}/bare`, () => bareCount, []), () => burst(`${PREFIX}/svc`, () => consumed(admin), pids)]);
    const rate = (xs: Array<{ rate: number }>) => median(xs.map((x) => x.rate));
    printGrid(`MQTT consume: ${MESSAGES} messages of ${BODY.length} bytes at QoS 1 per round, Mosquitto on this machine, 1 sandbox process`, ['case', 'msg/s', 'vs bare', 'round spread', 'server CPU µs/msg', 'note'], [
      ['bare mqtt.js subscriber (baseline)', rate(base!).toFixed(0), '1.00', '', '', `acknowledges on receipt; this process (publisher too): ${median(base!.map((x) => x.loaderUs)).toFixed(0)} µs/msg`],
      ['channel_mqtt → trivial service', rate(chan!).toFixed(0), (rate(chan!) / rate(base!)).toFixed(2), roundSpread(chan!.map((x) => x.rate), base!.map((x) => x.rate)), median(chan!.map((x) => x.us)).toFixed(0), 'decoded (json), run in the sandbox, PUBACK after; one message at a time'],
    ]);
  } finally {
    await Promise.all([publisher.endAsync(), bare.endAsync()]);
    await svc.stop();
  }
}
