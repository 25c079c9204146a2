import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { SMTP, testServers, uniqueMailUser } from '../../../helpers/servers.ts';
import { until } from '../../delivery/use-queue/support.ts';
import { inbox, SENDER, Sink, TLS_CERT } from './support.ts';

/**
 * Sending through the Use queue: the mail is stored, sent by the connector's runner, retried while
 * the server is down or answers 4xx, dead-lettered at once on a 5xx and after the last attempt
 * otherwise; replay sends it again; mails stored at a stop are sent after the restart.
 */
const config = (sinkPort: number) => `
channel_rest:
  - { name: send, url_path: /send, service: sender, security: none }
smtp_connection:
  - name: relay
    host: ${SMTP.host}
    port: ${SMTP.port}
    tls: { ca_file: ${TLS_CERT} }
    username: svc
    password: ${SMTP.password}
    from: svc@svc.test
    delivery: { max_attempts: 3, base_delay_ms: 20, max_delay_ms: 40 }
  - name: sink
    host: 127.0.0.1
    port: ${sinkPort}
    security: none
    from: svc@svc.test
    queue_by_default: true
    connect_timeout_ms: 300
    delivery: { max_attempts: 4, base_delay_ms: 100, max_delay_ms: 200 }
`;

const sink = new Sink();
const dir = mkdtempSync(join(tmpdir(), 'svc-smtp-queue-'));
let k: TestKernel;

beforeAll(async () => {
  await testServers();
  await sink.start();
  k = await startKernel({ config: config(sink.port), services: { 'sender.ts': SENDER }, dir });
});

afterAll(async () => {
  await k?.close();
  await sink.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function send(body: Record<string, unknown>, kernel = k): Promise<Record<string, unknown>> {
  const res = await kernel.app.inject({ method: 'POST', url: '/send', payload: { connection: 'relay', ...body } });
  expect(res.statusCode).toBe(200);
  return res.json();
}

const deadLetters = async (connection: string, kernel = k) => (await kernel.kernel.runControl('queue.list', { channel: `smtp:${connection}`, state: 'dead', limit: 100 })) as Array<{ id: number; cid: string; service: string; attempts: number; errorCount: number; lastError: { kind: string; message: string } }>;
const mailRows = (kernel = k) => kernel.kernel.store.all<{ id: number; channel: string; service: string; state: string; attempts: number; request: string }>("SELECT id, channel, service, state, attempts, request FROM use_queue_event WHERE channel LIKE 'smtp:%' ORDER BY id");

describe('mail(name).send with { queue: true }', () => {
  it('resolves { queued, cid } once stored; the runner sends it (never a service) and the mail arrives', async () => {
    const to = uniqueMailUser();
    const r = await send({ message: { to, subject: 'queued', text: 'from the queue' }, options: { queue: true } });
    expect(r.result).toEqual({ queued: true, cid: expect.any(String) });
    expect((await inbox(to))[0]!.subject).toBe('queued');
    await until(k, () => true);
    expect(await mailRows()).toEqual([]);
  });

  it('a permanent refusal (550) goes to the dead-letter queue after one attempt, with the reason; the stored mail holds no password', async () => {
    const r = await send({ message: { to: 'reject-550@svc.test', subject: 'never', text: 't' }, options: { queue: true } });
    await expect.poll(async () => (await deadLetters('relay')).filter((d) => d.cid === (r.result as { cid: string }).cid).length, { timeout: 10_000 }).toBe(1);
    const dead = (await deadLetters('relay')).find((d) => d.cid === (r.result as { cid: string }).cid)!;
    expect(dead).toMatchObject({ service: '@smtp', attempts: 1, errorCount: 1, lastError: { kind: 'BAD_REQUEST', message: expect.stringContaining('550 No such user') } });
    const stored = (await mailRows()).find((row) => row.id === dead.id)!;
    expect(stored.request).toContain('reject-550@svc.test');
    expect(stored.request).not.toContain(SMTP.password);
  });

  it('a temporary refusal (451) is retried max_attempts times, then dead-lettered', async () => {
    const r = await send({ message: { to: 'reject-451@svc.test', subject: 'later', text: 't' }, options: { queue: true } });
    const cid = (r.result as { cid: string }).cid;
    await expect.poll(async () => (await deadLetters('relay')).find((d) => d.cid === cid)?.attempts, { timeout: 10_000 }).toBe(3);
    const dead = (await deadLetters('relay')).find((d) => d.cid === cid)!;
    expect(dead).toMatchObject({ errorCount: 3, lastError: { kind: 'SERVICE_UNAVAILABLE', message: expect.stringContaining('451 Try again later') } });
  });

  it('a server that is down: queued by default, retried, sent once the server is back', async () => {
    await sink.stop();
    const r = await send({ connection: 'sink', message: { to: 'back@svc.test', subject: 'after the outage', text: 't' } });
    expect(r.result).toMatchObject({ queued: true });
    await until(k, (rows) => rows.some((row) => row.channel === 'smtp:sink' && row.attempts >= 2));
    await sink.start();
    await expect.poll(() => sink.received.map((m) => m.to), { timeout: 10_000 }).toContainEqual(['back@svc.test']);
    // The runner deletes the stored mail once the server has answered the whole exchange, a moment after the sink has it.
    await expect.poll(async () => (await mailRows()).filter((row) => row.channel === 'smtp:sink'), { timeout: 10_000 }).toEqual([]);
    expect(sink.received.filter((m) => m.to.includes('back@svc.test'))).toHaveLength(1);
  });

  it('down past the last attempt: a dead letter in smtp:<name>; replay sends the mail', async () => {
    await sink.stop();
    const r = await send({ connection: 'sink', message: { to: 'replayed@svc.test', subject: 'replay me', text: 't' } });
    const cid = (r.result as { cid: string }).cid;
    await expect.poll(async () => (await deadLetters('sink')).find((d) => d.cid === cid)?.attempts, { timeout: 10_000 }).toBe(4);
    expect((await deadLetters('sink')).find((d) => d.cid === cid)!.lastError.message).toContain('ECONNREFUSED');
    await sink.start();
    const dead = (await deadLetters('sink')).find((d) => d.cid === cid)!;
    await k.kernel.runControl('queue.replay', { id: dead.id });
    await expect.poll(() => sink.received.map((m) => m.to), { timeout: 10_000 }).toContainEqual(['replayed@svc.test']);
    await expect.poll(() => deadLetters('sink'), { timeout: 10_000 }).toEqual([]);
    await expect.poll(async () => (await mailRows()).filter((row) => row.channel === 'smtp:sink'), { timeout: 10_000 }).toEqual([]);
  });

  it('mails stored when the server stops are sent after the restart, by the runner', async () => {
    await sink.stop();
    // A long wait between attempts: the mail is still stored when the kernel stops.
    const slow = config(sink.port).replace('delivery: { max_attempts: 4, base_delay_ms: 100, max_delay_ms: 200 }', 'delivery: { max_attempts: 4, base_delay_ms: 600000, max_delay_ms: 600000 }');
    expect(await k.writeConfig(slow)).toBe(true);
    await send({ connection: 'sink', message: { to: 'restart@svc.test', subject: 'across a restart', text: 't' } });
    await until(k, (rows) => rows.some((row) => row.channel === 'smtp:sink' && row.attempts === 1 && row.state === 'pending'));
    await k.close();
    await sink.start();
    // The restarted server's clock is past the retry's due time (the kernel's clock, injected).
    k = await startKernel({ config: config(sink.port), services: { 'sender.ts': SENDER }, dir, clock: { now: () => Date.now() + 700_000 } });
    await expect.poll(() => sink.received.map((m) => m.to), { timeout: 10_000 }).toContainEqual(['restart@svc.test']);
  });
});
