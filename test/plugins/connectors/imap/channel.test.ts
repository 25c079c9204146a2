import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServers } from '../../../helpers/servers.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { parseExposition, sampleValue, startObserved, type ObservedKernel } from '../../observe/support.ts';
import { channel, mail, Mailbox, multipartMail, Recorder, REPORTER } from './support.ts';

/** channel_imap against the real Dovecot: each case its own mailbox user and channel, one kernel. */
interface Report {
  channel: string;
  attempt: number;
  uid: number;
  subject: string;
  [key: string]: unknown;
}

const rec = new Recorder<Report>();
const boxes = {
  seen: new Mailbox('seen'),
  move: new Mailbox('move'),
  del: new Mailbox('del'),
  fail: new Mailbox('fail'),
  poll: new Mailbox('poll'),
  idle: new Mailbox('idle'),
  limits: new Mailbox('limits'),
  queued: new Mailbox('queued'),
};
let k: ObservedKernel;

const config = () => `
outgoing_rest:
  - ${rec.outgoing()}
channel_imap:
  - ${channel(boxes.seen.user, { name: 'seen-in' })}
  - ${channel(boxes.move.user, { name: 'move-in', after_success: { action: 'move', folder: 'Done' } })}
  - ${channel(boxes.del.user, { name: 'del-in', after_success: { action: 'delete' } })}
  - ${channel(boxes.fail.user, { name: 'fail-in', error_folder: 'Failed' })}
  - ${channel(boxes.poll.user, { name: 'poll-in', idle: false, poll_interval_ms: 300 })}
  - ${channel(boxes.idle.user, { name: 'idle-in', poll_interval_ms: 600_000 })}
  - ${channel(boxes.limits.user, { name: 'limits-in', max_message_bytes: 4096, max_attachment_bytes: 100 })}
  - ${channel(boxes.queued.user, { name: 'queued-in', delivery: { use_queue: true, max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20 } })}
`;

beforeAll(async () => {
  await testServers();
  await rec.start();
  for (const b of Object.values(boxes)) await b.open();
  k = await startObserved({ config: config(), services: { 'reporter.ts': REPORTER } });
}, 60_000);

afterAll(async () => {
  if (process.env.IMAP_DEBUG) console.log(JSON.stringify(k.logs.filter((l) => l.plugin === 'imap' || /imap|inbound/i.test(String(l.msg))), null, 1));
  await k?.close();
  for (const b of Object.values(boxes)) await b.close();
  await rec.close();
});

async function ready(): Promise<{ connections: unknown[] }> {
  return (await (await fetch(`${k.admin}/ready`)).json()) as { connections: unknown[] };
}

const reports = (ch: string, subject?: string) => rec.got.filter((r) => r.channel === ch && (subject === undefined || r.subject === subject));
const runsOf = (ch: string, subject: string, n = 1) => waitFor(`${n} run(s) of '${subject}' on ${ch}`, () => reports(ch, subject).length >= n && reports(ch, subject), 15_000);

async function deadLetters(name: string): Promise<Array<{ id: number }>> {
  return (await k.kernel.runControl('queue.list', { channel: `imap:${name}`, state: 'dead', limit: 20 })) as Array<{ id: number }>;
}

async function shown(id: number): Promise<{ errors: Array<{ kind: string; message: string }>; request: { payload: Record<string, unknown> } }> {
  return (await k.kernel.runControl('queue.show', { id })) as { errors: Array<{ kind: string; message: string }>; request: { payload: Record<string, unknown> } };
}

describe('channel_imap', () => {
  it('runs the service once per new mail with its parsed headers, text, HTML and attachments, then flags it seen', async () => {
    const csv = Buffer.from('id,qty\n42,3\n');
    const uid = await boxes.seen.append(multipartMail('order-42', csv));
    const [got] = await runsOf('seen-in', 'order-42');
    expect(got).toMatchObject({
      uid,
      attempt: 1,
      inputSubject: 'order-42',
      from: { name: 'Bob Sender', address: 'bob@svc.test' },
      to: [{ name: '', address: 'orders@svc.test' }, { name: 'Carol', address: 'carol@svc.test' }],
      cc: [{ address: 'audit@svc.test' }],
      replyTo: [{ address: 'replies@svc.test' }],
      messageId: '<order-42@svc.test>',
      date: '2023-11-14T22:13:20.000Z',
      text: 'Order 42 attached.',
      html: '<p>Order <b>42</b> attached.</p>',
      attachments: [{ filename: 'order.csv', contentType: 'text/csv', size: csv.length, content: csv.toString('base64') }],
    });
    expect(got!.headers).toMatchObject({ subject: 'order-42', 'message-id': '<order-42@svc.test>', 'imap-uid': String(uid), 'imap-mailbox': 'INBOX', cc: 'audit@svc.test' });
    await waitFor('the mail flagged seen', async () => (await boxes.seen.list()).find((m) => m.uid === uid)?.seen);
    // A later mail runs too, and the first has still run once.
    await boxes.seen.append(mail({ subject: 'after-42' }));
    await runsOf('seen-in', 'after-42');
    expect(reports('seen-in', 'order-42')).toHaveLength(1);
    expect((await boxes.seen.list()).map((m) => m.subject)).toEqual(['order-42', 'after-42']);
  });

  it('moves a processed mail to after_success.folder (created), or deletes it', async () => {
    await boxes.move.append(mail({ subject: 'move-me' }));
    await runsOf('move-in', 'move-me');
    await waitFor('the mail moved to Done', async () => (await boxes.move.list('Done')).some((m) => m.subject === 'move-me'));
    expect(await boxes.move.list()).toEqual([]);
    await boxes.del.append(mail({ subject: 'delete-me' }));
    await runsOf('del-in', 'delete-me');
    await waitFor('the mail deleted', async () => (await boxes.del.list()).length === 0);
    expect(await boxes.del.list('svc-errors')).toEqual([]);
  });

  it('retries a failing service, then dead-letters the mail with the reason and moves it to error_folder', async () => {
    await boxes.fail.append(mail({ subject: 'fail-1' }));
    await runsOf('fail-in', 'fail-1', 2);
    await waitFor('the mail in Failed', async () => (await boxes.fail.list('Failed')).some((m) => m.subject === 'fail-1'));
    expect(await boxes.fail.list()).toEqual([]);
    const [dead] = await deadLetters('fail-in');
    const s = await shown(dead!.id);
    expect(s.errors.at(-1)).toMatchObject({ message: expect.stringContaining('refused: fail-1') });
    expect(reports('fail-in', 'fail-1').map((r) => r.attempt)).toEqual([1, 2]);
    // A permanent error (BadRequest) is not retried.
    await boxes.fail.append(mail({ subject: 'bad-1' }));
    await waitFor('bad-1 in Failed', async () => (await boxes.fail.list('Failed')).some((m) => m.subject === 'bad-1'));
    expect(reports('fail-in', 'bad-1')).toHaveLength(1);
  });

  it('polls when idle is false', async () => {
    await boxes.poll.append(mail({ subject: 'polled' }));
    await runsOf('poll-in', 'polled');
  });

  it('picks a new mail up through IDLE within about a second (its poll is 10 minutes)', async () => {
    await waitFor('idle-in up', async () => JSON.stringify(await ready()).includes('"name":"idle-in","role":"channel","state":"up"'));
    // Let the channel's first round end and IDLE begin.
    await new Promise((r) => setTimeout(r, 300));
    const sent = Date.now();
    await boxes.idle.append(mail({ subject: 'pushed' }));
    await runsOf('idle-in', 'pushed');
    expect(Date.now() - sent).toBeLessThan(1_500);
  });

  it('dead-letters a malformed message, one above max_message_bytes (headers kept) and one with a too large attachment', async () => {
    await boxes.limits.append(Buffer.from('\x00\x01 these bytes are no mail at all'));
    await boxes.limits.append(mail({ subject: 'big-one', text: 'x'.repeat(10_000) }));
    await boxes.limits.append(multipartMail('att-big', Buffer.alloc(500, 7)));
    await boxes.limits.append(mail({ subject: 'fine' }));
    await runsOf('limits-in', 'fine');
    await waitFor('3 dead letters', async () => (await deadLetters('limits-in')).length === 3);
    const errors = await Promise.all((await deadLetters('limits-in')).map(async (d) => (await shown(d.id)).errors.at(-1)));
    expect(errors.map((e) => e!.kind).sort()).toEqual(['AttachmentTooLarge', 'MalformedMessage', 'MessageTooLarge']);
    expect(errors.find((e) => e!.kind === 'MessageTooLarge')!.message).toMatch(/above max_message_bytes \(4096\)/);
    const tooBig = (await Promise.all((await deadLetters('limits-in')).map((d) => shown(d.id)))).find((s) => s.errors.at(-1)!.kind === 'MessageTooLarge')!;
    expect(tooBig.request.payload).toMatchObject({ subject: 'big-one', text: null, size: expect.any(Number), headers: { subject: 'big-one' } });
    await waitFor('all three in svc-errors', async () => (await boxes.limits.list('svc-errors')).length === 3);
    expect((await boxes.limits.list()).map((m) => m.subject)).toEqual(['fine']);
    expect(reports('limits-in').map((r) => r.subject)).toEqual(['fine']);
  });

  it('stores mails in the Use queue with use_queue, which runs them', async () => {
    await boxes.queued.append(mail({ subject: 'queued-1' }));
    await runsOf('queued-in', 'queued-1');
    await waitFor('flagged seen', async () => (await boxes.queued.list())[0]?.seen);
  });

  it('reports each channel for /ready and /metrics, without the password', async () => {
    const body = await ready();
    expect(body.connections).toEqual(expect.arrayContaining([{ kind: 'imap', name: 'seen-in', role: 'channel', state: 'up', ready_check: false }]));
    expect(JSON.stringify(body)).not.toContain('svc-test');
    const res = await fetch(`${k.admin}/metrics`, { headers: { authorization: `Basic ${Buffer.from('admin:admin-test-password').toString('base64')}` } });
    const samples = parseExposition(await res.text());
    expect(sampleValue(samples, 'svc_connector_up', { kind: 'imap', connection: 'seen-in' })).toBe(1);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'imap', connection: 'seen-in', operation: 'consume', outcome: 'ok' })).toBe(2);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'imap', connection: 'limits-in', operation: 'consume', outcome: 'dead_letter' })).toBe(3);
  });
});
