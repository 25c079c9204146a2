import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MqttClient } from 'mqtt';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { BROKER_URL, bareClient, collector, uniquePrefix } from './support.ts';

const P = uniquePrefix();
const CLIENT_ID = `${P.replace('/', '-')}-session`;
const CONFIG = `
mqtt_connection:
  - { name: out, url: '${BROKER_URL}' }
channel_mqtt:
  - { name: readings, client_id: ${CLIENT_ID}, url: '${BROKER_URL}', reconnect: { min_ms: 100, max_ms: 400 }, topics: ['${P}/in/#'], service: record, delivery: { max_attempts: 5, base_delay_ms: 60000, max_delay_ms: 60000 } }
`;
const RECORD = `import { mqtt, service } from 'svc/sdk';
export default service({ POST: async (ctx) => { await mqtt('out').publish('${P}/results', { payload: ctx.payload, dup: ctx.headers['mqtt-dup'] }); return {}; } });
`;
const FAIL = `import { service } from 'svc/sdk';
export default service({ POST: async () => { throw new Error('not now'); } });
`;

const dir = mkdtempSync(join(tmpdir(), 'svc-mqtt-session-'));
let results: Awaited<ReturnType<typeof collector>>;
let sender: MqttClient;
let k: TestKernel | undefined;
const logs: Array<Record<string, unknown>> = [];
const received = () => results.received.map((m) => JSON.parse(m.text) as { payload: { n: number }; dup: string });

async function start(service: string): Promise<TestKernel> {
  const kernel = await startKernel({ config: CONFIG, dir, logs, services: { 'record.ts': service } });
  for (const end = performance.now() + 10_000; kernel.kernel.api.connections().find((c) => c.name === 'readings')?.state !== 'up'; ) {
    if (performance.now() > end) throw new Error('the channel did not connect');
    await new Promise((r) => setTimeout(r, 20));
  }
  return kernel;
}

beforeAll(async () => {
  results = await collector(`${P}/results`);
  sender = await bareClient();
});
afterAll(async () => {
  await k?.close();
  await (await bareClient({ clientId: CLIENT_ID, clean: true })).endAsync();
  await Promise.all([results?.client.endAsync(), sender?.endAsync()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('a persistent session', () => {
  it('delivers messages published while the server was stopped once it starts again', async () => {
    k = await start(RECORD);
    await k.close();
    k = undefined;
    for (const n of [1, 2, 3]) await sender.publishAsync(`${P}/in/${n}`, JSON.stringify({ n }), { qos: 1 });
    k = await start(RECORD);
    await expect.poll(() => received().map((r) => r.payload.n).sort(), { timeout: 10_000 }).toEqual([1, 2, 3]);
  });

  it('does not acknowledge a message waiting for a retry when the server stops: it runs after the restart', async () => {
    await k!.writeService('record.ts', FAIL);
    await sender.publishAsync(`${P}/in/4`, JSON.stringify({ n: 4 }), { qos: 1 });
    await expect.poll(() => logs.some((l) => String(l.msg).includes('the service failed (Error: not now)')), { timeout: 10_000 }).toBe(true);
    await k!.close();
    k = undefined;
    expect(received().some((r) => r.payload.n === 4)).toBe(false);
    k = await start(RECORD);
    await expect.poll(() => received().find((r) => r.payload.n === 4), { timeout: 10_000 }).toEqual({ payload: { n: 4 }, dup: 'true' });
    const dead = (await k.kernel.runControl('queue.list', { channel: 'mqtt:readings', state: 'dead', limit: 10 })) as unknown[];
    expect(dead).toEqual([]);
  });

  it('follows a change of topics in the config: the session is subscribed to the new filters and not to the dropped ones', async () => {
    expect(await k!.writeConfig(CONFIG.replace(`topics: ['${P}/in/#']`, `topics: ['${P}/new/+']`))).toBe(true);
    const channel = () => k!.kernel.api.connections().find((c) => c.name === 'readings');
    await expect.poll(() => channel()?.state, { timeout: 10_000 }).toBe('up');
    await expect.poll(async () => {
      // Published in this order on one session: a dropped filter would deliver 'old' first.
      await sender.publishAsync(`${P}/in/5`, JSON.stringify({ n: 5 }), { qos: 1 });
      await sender.publishAsync(`${P}/new/6`, JSON.stringify({ n: 6 }), { qos: 1 });
      return received().some((r) => r.payload.n === 6);
    }, { timeout: 10_000 }).toBe(true);
    expect(received().some((r) => r.payload.n === 5)).toBe(false);
  });
});
