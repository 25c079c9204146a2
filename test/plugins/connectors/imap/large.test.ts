import { afterAll, beforeAll, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { testServers } from '../../../helpers/servers.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { channel, mail, Mailbox, Recorder, REPORTER } from './support.ts';

/** A real 50 MB mail against the default max_message_bytes (25 MiB): not downloaded, dead-lettered, the server keeps going. */
const rec = new Recorder<{ subject: string }>();
const box = new Mailbox('large');
let k: TestKernel;

beforeAll(async () => {
  await testServers();
  await rec.start();
  await box.open();
  k = await startKernel({ config: `outgoing_rest:\n  - ${rec.outgoing()}\nchannel_imap:\n  - ${channel(box.user, { name: 'large-in' })}\n`, services: { 'reporter.ts': REPORTER } });
}, 60_000);

afterAll(async () => {
  await k?.close();
  await box.close();
  await rec.close();
});

it('a 50 MB mail is dead-lettered with its headers, without being downloaded, and moved to svc-errors; the next mail runs', async () => {
  await box.append(mail({ subject: 'huge', text: 'y'.repeat(50 * 1024 * 1024) }));
  await box.append(mail({ subject: 'small' }));
  await waitFor('the small mail run', () => rec.got.some((r) => r.subject === 'small'), 60_000);
  const dead = (await k.kernel.runControl('queue.list', { channel: 'imap:large-in', state: 'dead', limit: 5 })) as Array<{ id: number }>;
  expect(dead).toHaveLength(1);
  const shown = (await k.kernel.runControl('queue.show', { id: dead[0]!.id })) as { errors: Array<{ kind: string; message: string }>; request: { payload: { subject: string; size: number } } };
  expect(shown.errors.at(-1)).toMatchObject({ kind: 'MessageTooLarge', message: expect.stringContaining('above max_message_bytes (26214400)') });
  expect(shown.request.payload).toMatchObject({ subject: 'huge', size: expect.any(Number) });
  expect(shown.request.payload.size).toBeGreaterThan(50 * 1024 * 1024);
  await waitFor('huge in svc-errors', async () => (await box.list('svc-errors')).some((m) => m.subject === 'huge'), 30_000);
  expect(rec.got.map((r) => r.subject)).toEqual(['small']);
}, 120_000);
