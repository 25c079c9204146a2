import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel } from '../../../helpers/kernel.ts';
import { Bare, BROKER, suffix } from './support.ts';

/** Graceful shutdown acknowledges nothing it has not processed. */
const QUEUE = `svc-amqp-slow-${suffix}`;
const FLAKY = `import { service } from 'svc/sdk';
export default service({ handle(ctx) { throw new Error('not yet'); } });
`;

const bare = new Bare();
beforeAll(async () => {
  await bare.open();
  await bare.queue(QUEUE);
});
afterAll(() => bare.close());

describe('shutdown', () => {
  it('while a message waits for its retry: not acked, back on the queue after close', async () => {
    const logs: Array<Record<string, unknown>> = [];
    const k = await startKernel({
      logs,
      config: `
amqp_connection:
  - { name: main, url: "${BROKER}" }
channel_amqp:
  - { name: slow-in, connection: main, queue: ${QUEUE}, service: flaky, delivery: { max_attempts: 5, base_delay_ms: 60000, max_delay_ms: 60000 } }
`,
      services: { 'flaky.ts': FLAKY },
    });
    try {
      bare.send(QUEUE, { id: 1 }, { messageId: 'keep-me' });
      // Taken by the consumer (not ready on the queue any more), its first attempt failed: it waits for the retry.
      await expect.poll(() => bare.count(QUEUE)).toBe(0);
      await expect.poll(() => logs.some((l) => String(l.msg).startsWith('inbound message: the service failed'))).toBe(true);
    } finally {
      const started = Date.now();
      await k.close();
      expect(Date.now() - started).toBeLessThan(8_000);
    }
    const back = await bare.next(QUEUE);
    expect(back.properties.messageId).toBe('keep-me');
    expect(back.fields.redelivered).toBe(true);
  });
});
