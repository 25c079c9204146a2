import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { connect, type IClientOptions, type IPublishPacket, type MqttClient } from 'mqtt';

export const BROKER_URL = process.env.SVC_TEST_MQTT_URL ?? 'mqtt://127.0.0.1:1883';

/** A topic prefix of this run alone: files run in parallel, and on three Node lines in CI. */
export function uniquePrefix(): string {
  return `svc-test/${randomBytes(5).toString('hex')}`;
}

/** A bare mqtt.js client, connected. */
export async function bareClient(options: IClientOptions = {}): Promise<MqttClient> {
  const client = connect(BROKER_URL, { reconnectPeriod: 0, connectTimeout: 5_000, ...options });
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  return client;
}

/** A bare client subscribed to `filter`, collecting what arrives. */
export async function collector(filter: string, options: IClientOptions = {}): Promise<{ client: MqttClient; received: Array<{ topic: string; text: string; packet: IPublishPacket }> }> {
  const client = await bareClient(options);
  const received: Array<{ topic: string; text: string; packet: IPublishPacket }> = [];
  client.on('message', (topic, payload, packet) => received.push({ topic, text: payload.toString(), packet }));
  await client.subscribeAsync(filter, { qos: 2 });
  return { client, received };
}

/** An address where nothing listens: a port taken and given back. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `mqtt://127.0.0.1:${port}`;
}
