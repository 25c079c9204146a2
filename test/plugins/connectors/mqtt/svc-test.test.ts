import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outgoingPaths } from '../../../../cli/testing/fakes.ts';
import { startTestEngine, type TestEngine } from '../../../../cli/testing/harness.ts';
import { ServiceUnavailable } from '../../../../sdk/errors.ts';
import { testService } from '../../../../sdk/testing/index.ts';

/** `svc test` fakes of MQTT connections: a service's publishes recorded, a fake that refuses, a connection with no fake. */
const dir = mkdtempSync(join(tmpdir(), 'svc-testing-mqtt-'));
const SENSOR = `import { mqtt, service } from 'svc/sdk';
export default service({
  async POST(ctx) {
    await mqtt(ctx.payload.connection ?? 'sensors').publish('plant/' + ctx.payload.id + '/temp', { c: ctx.payload.c }, { qos: 2, retain: true });
    await mqtt(ctx.payload.connection ?? 'sensors').publish('plant/log', 'text');
    return { ok: true };
  },
});
`;

let engine: TestEngine;
let close: () => Promise<void>;
beforeAll(async () => {
  writeFileSync(join(dir, 'sensor.ts'), SENSOR);
  ({ engine, close } = await startTestEngine(outgoingPaths([])));
  engine.testFile = join(dir, 'sensor.test.ts');
  (globalThis as unknown as Record<symbol, unknown>)[Symbol.for('svc.testing')] = { engine, tests: [], prefix: [] };
});
afterAll(async () => {
  await close?.();
  rmSync(dir, { recursive: true, force: true });
});

describe('svc test: mqtt fakes', () => {
  it('records what the service publishes, with QoS and retain', async () => {
    const sensor = testService('sensor', { mqtt: { sensors: {} } });
    const res = await sensor.post({}, { payload: { id: 7, c: 21.5 } });
    expect(res.error).toBeUndefined();
    expect(sensor.mqttPublished).toEqual([
      { connection: 'sensors', topic: 'plant/7/temp', message: { c: 21.5 }, qos: 2, retain: true },
      { connection: 'sensors', topic: 'plant/log', message: 'text', qos: 1, retain: false },
    ]);
  });

  it('lets a fake refuse with an SDK error, and fails the call clearly for a connection with no fake', async () => {
    const refusing = testService('sensor', { mqtt: { sensors: { publish: () => { throw new ServiceUnavailable('broker down'); } } } });
    const res = await refusing.post({}, { payload: { id: 1, c: 1 } });
    expect(res.status).toBe(503);
    expect(res.error).toBeInstanceOf(ServiceUnavailable);
    expect(refusing.mqttPublished).toEqual([]);
    await expect(testService('sensor', { mqtt: { sensors: {} } }).post({}, { payload: { id: 1, c: 1, connection: 'other' } })).rejects.toThrow(/MQTT connection 'other', which has no fake/);
  });
});
