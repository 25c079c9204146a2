import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outgoingPaths } from '../../../cli/testing/fakes.ts';
import { startTestEngine, type TestEngine } from '../../../cli/testing/harness.ts';
import { ServiceError } from '../../../sdk/errors.ts';
import { testService } from '../../../sdk/testing/index.ts';

/** `mail:` fakes of svc test: mails are checked as the host checks them, then recorded for the test. */
const dir = mkdtempSync(join(tmpdir(), 'svc-mail-fakes-'));

const NOTIFIER = `import { mail, service } from 'svc/sdk';
export default service({
  async handle(ctx) {
    try {
      const result = await mail('notify').send({ to: ctx.input.to, subject: ctx.input.subject ?? 'Order shipped', text: 'On its way.', attachments: [{ filename: 'label.bin', content: new Uint8Array([1, 2, 3]) }] }, { queue: ctx.input.queue === true });
      return { result };
    } catch (e) {
      return { error: e.kind + ': ' + e.message };
    }
  },
});
`;

let engine: TestEngine;
let close: () => Promise<void>;
beforeAll(async () => {
  writeFileSync(join(dir, 'notifier.ts'), NOTIFIER);
  ({ engine, close } = await startTestEngine(outgoingPaths([])));
  engine.testFile = join(dir, 'notifier.test.ts');
  (globalThis as unknown as Record<symbol, unknown>)[Symbol.for('svc.testing')] = { engine, tests: [], prefix: [] };
});
afterAll(async () => {
  await close?.();
  rmSync(dir, { recursive: true, force: true });
});

describe('mail fakes', () => {
  it('records a mail sent on a faked connection, answering as the server would; queued ones answer { queued, cid }', async () => {
    const notifier = testService('notifier', { mail: { notify: true } });
    expect((await notifier.post({ to: 'Ann <ann@example.com>' })).body).toEqual({ result: { messageId: expect.stringMatching(/^<fake-\d+@svc-test>$/), accepted: ['ann@example.com'], rejected: [] } });
    expect((await notifier.post({ to: 'bob@example.com', queue: true })).body).toEqual({ result: { queued: true, cid: expect.any(String) } });
    expect(notifier.mailSent).toEqual([
      { connection: 'notify', queued: false, message: { to: 'Ann <ann@example.com>', subject: 'Order shipped', text: 'On its way.', attachments: [{ filename: 'label.bin', content: 'AQID', encoding: 'base64' }] } },
      { connection: 'notify', queued: true, message: expect.objectContaining({ to: 'bob@example.com' }) },
    ]);
  });

  it('refuses what the host refuses (header injection), a fake may fail a send, an unfaked connection fails the test', async () => {
    const notifier = testService('notifier', { mail: { notify: true } });
    expect((await notifier.post({ to: 'ann@example.com', subject: 'x\r\nBcc: all@example.com' })).body).toEqual({ error: 'BadRequest: subject may not hold a line break (header injection)' });
    expect(notifier.mailSent).toEqual([]);
    const down = testService('notifier', { mail: { notify: () => { throw new ServiceError('ServiceUnavailable', 503, 'mail server down'); } } });
    expect((await down.post({ to: 'ann@example.com' })).body).toEqual({ error: 'ServiceUnavailable: mail server down' });
    expect(down.mailSent).toEqual([]);
    await expect(testService('notifier').post({ to: 'ann@example.com' })).rejects.toThrow("notifier sent mail on the SMTP connection 'notify', which has no fake: add mail: { 'notify': true } to testService('notifier', …)");
  });
});
