import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedPort } from '../../../helpers/refused-port.ts';
import { SMTP, testServers, uniqueMailUser } from '../../../helpers/servers.ts';
import { parseExposition, sampleValue, startObserved, type ObservedKernel } from '../../observe/support.ts';
import { inbox, SENDER, TLS_CERT } from './support.ts';

/** Sending now, against the SMTP relay of the test servers, which delivers to Dovecot: what arrives, what is refused and how. */
const config = (deadPort: number) => `
channel_rest:
  - { name: send, url_path: /send, service: sender, security: none }
  - { name: other, url_path: /other, service: other, security: none }
smtp_connection:
  - name: relay
    host: ${SMTP.host}
    port: ${SMTP.port}
    tls: { ca_file: ${TLS_CERT} }
    username: svc
    password: ${SMTP.password}
    from: "Svc Test <svc@svc.test>"
    reply_to: replies@svc.test
    max_message_bytes: 1048576
    max_recipients: 3
    allowed_services: [sender]
    ready_check: true
  - { name: unverified, host: ${SMTP.host}, port: ${SMTP.port}, from: svc@svc.test }
  - { name: wrong-password, host: ${SMTP.host}, port: ${SMTP.port}, tls: { ca_file: ${TLS_CERT} }, username: svc, password: not-it, from: svc@svc.test }
  - { name: down, host: 127.0.0.1, port: ${deadPort}, security: none, from: svc@svc.test, connect_timeout_ms: 500 }
`;

let k: ObservedKernel;

beforeAll(async () => {
  await testServers();
  k = await startObserved({ config: config(await refusedPort()), services: { 'sender.ts': SENDER, 'other.ts': SENDER } });
});

afterAll(async () => {
  await k?.close();
});

async function send(body: Record<string, unknown>, path = '/send'): Promise<Record<string, unknown>> {
  const res = await fetch(`${k.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ connection: 'relay', ...body }) });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

describe('mail(name).send, now', () => {
  it('sends a mail with cc, html and an attachment over STARTTLS; it arrives in both mailboxes as sent', async () => {
    const to = uniqueMailUser('to');
    const cc = uniqueMailUser('cc');
    const r = await send({
      message: { to: `Recipient <${to}>`, cc: [cc], subject: 'Invoice 42 — ready', text: 'See the attachment.', html: '<p>See the <b>attachment</b>.</p>', headers: { 'X-Order': '42' }, attachments: [{ filename: 'invoice.csv', content: 'id,total\n42,99.50\n', contentType: 'text/csv' }] },
      bytes: 300,
    });
    expect(r.result).toMatchObject({ accepted: [to, cc], rejected: [], messageId: expect.stringMatching(/^<.+@.+>$/) });
    const [got] = await inbox(to);
    expect(got!.subject).toBe('Invoice 42 — ready');
    expect(got!.from?.text).toBe('"Svc Test" <svc@svc.test>');
    expect(got!.replyTo?.text).toBe('replies@svc.test');
    expect(got!.text?.trim()).toBe('See the attachment.');
    expect(got!.html).toContain('<b>attachment</b>');
    expect(got!.headers.get('x-order')).toBe('42');
    expect(got!.messageId).toBe((r.result as { messageId: string }).messageId);
    const files = got!.attachments.map((a) => ({ name: a.filename, type: a.contentType, text: a.filename === 'invoice.csv' ? a.content.toString('utf8') : a.content.length }));
    expect(files).toEqual([
      { name: 'invoice.csv', type: 'text/csv', text: 'id,total\n42,99.50\n' },
      { name: 'blob.bin', type: 'application/octet-stream', text: 300 },
    ]);
    expect(got!.attachments[1]!.content.every((b) => b === 7)).toBe(true);
    const [copy] = await inbox(cc);
    expect(copy!.subject).toBe('Invoice 42 — ready');
  });

  it('refuses the self-signed certificate without ca_file (reject_unauthorized), ServiceUnavailable saying why', async () => {
    const r = await send({ connection: 'unverified', message: { to: uniqueMailUser(), subject: 's', text: 't' } });
    expect(r).toMatchObject({ error: 'ServiceUnavailable', status: 503, message: expect.stringMatching(/self.signed|certificate/i) });
  });

  it('a wrong password: ServiceUnavailable saying the login was refused, not the password', async () => {
    const r = await send({ connection: 'wrong-password', message: { to: uniqueMailUser(), subject: 's', text: 't' } });
    expect(r).toMatchObject({ error: 'ServiceUnavailable', status: 503, message: expect.stringContaining('refused the login') });
    expect(JSON.stringify(r)).not.toContain('not-it');
  });

  it('a recipient refused for good (550): BadRequest naming it; one refused among others: sent to the rest, reported', async () => {
    const r = await send({ message: { to: 'reject-550@svc.test', subject: 's', text: 't' } });
    expect(r).toMatchObject({ error: 'BadRequest', status: 400, message: expect.stringMatching(/refused the mail for good: 550 .*rejected: reject-550@svc.test/) });
    const ok = uniqueMailUser();
    const partly = await send({ message: { to: [ok, 'reject-550@svc.test'], subject: 'partly', text: 't' } });
    expect(partly.result).toMatchObject({ accepted: [ok], rejected: ['reject-550@svc.test'] });
    expect((await inbox(ok))[0]!.subject).toBe('partly');
  });

  it('a temporary refusal (451) and a server that is down: ServiceUnavailable', async () => {
    expect(await send({ message: { to: 'reject-451@svc.test', subject: 's', text: 't' } })).toMatchObject({ error: 'ServiceUnavailable', status: 503, message: expect.stringContaining('451') });
    expect(await send({ connection: 'down', message: { to: 'a@svc.test', subject: 's', text: 't' } })).toMatchObject({ error: 'ServiceUnavailable', status: 503, message: expect.stringContaining('ECONNREFUSED') });
  });

  it('a mail of 50 MB: PayloadTooLarge before it leaves the sandbox; one over max_message_bytes: PayloadTooLarge from the host; nothing sent, the server keeps running', async () => {
    const big = await send({ message: { to: uniqueMailUser(), subject: 'big', text: 't' }, bytes: 50 * 1024 * 1024 });
    expect(big).toMatchObject({ error: 'PayloadTooLarge', status: 413, message: expect.stringMatching(/^mail too large: about 69905069 characters encoded is larger than/) });
    const r = await send({ message: { to: uniqueMailUser(), subject: 'big', text: 't' }, bytes: 2 * 1024 * 1024 });
    expect(r).toMatchObject({ error: 'PayloadTooLarge', status: 413, message: expect.stringMatching(/^mail too large: about \d+ bytes encoded is larger than the 1048576 bytes SMTP connection 'relay' sends/) });
    const after = uniqueMailUser();
    expect((await send({ message: { to: after, subject: 'after', text: 't' } })).result).toMatchObject({ accepted: [after] });
  }, 60_000);

  it('refuses header injection and bad addresses, BadRequest naming the field', async () => {
    const to = uniqueMailUser();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ to, subject: 'hi\r\nBcc: victim@svc.test', text: 't' }, 'subject may not hold a line break'],
      [{ to, subject: 's', text: 't', headers: { 'X-A': 'v\nBcc: victim@svc.test' } }, "header 'X-A' may not hold a line break"],
      [{ to, subject: 's', text: 't', headers: { Bcc: 'victim@svc.test' } }, "header 'Bcc' is set from the message's own fields"],
      [{ to, subject: 's', text: 't', headers: { 'X-A:b': 'v' } }, 'is not a header name'],
      [{ to: `x@svc.test\r\nBcc: victim@svc.test`, subject: 's', text: 't' }, 'to: an address may not hold a line break'],
      [{ to, from: 'Evil\n <e@svc.test>', subject: 's', text: 't' }, 'from: an address may not hold a line break'],
      [{ to: 'not an address', subject: 's', text: 't' }, "to: 'not an address' is not a mail address"],
      [{ to: [to, 'a@svc.test', 'b@svc.test'], cc: 'c@svc.test', subject: 's', text: 't' }, '4 recipients are more than the 3'],
      [{ to, subject: 's', text: 't', attachments: [{ filename: 'a\r\n.txt', content: 'x' }] }, 'attachments[0].filename may not hold a line break'],
      [{ to, subject: 's', text: 't', attachments: [{ filename: 'a.txt', content: 'x', contentType: 'text/plain\r\nX: y' }] }, 'is not a media type'],
      [{ to, subject: 's' }, 'a mail needs text, html or an attachment'],
    ];
    for (const [message, why] of cases) expect(await send({ message }), why).toMatchObject({ error: 'BadRequest', status: 400, message: expect.stringContaining(why) });
  });

  it('an unknown connection: NotFound; a service not in allowed_services: Forbidden', async () => {
    expect(await send({ connection: 'nope', message: { to: 'a@svc.test', subject: 's', text: 't' } })).toMatchObject({ error: 'NotFound', status: 404, message: "No SMTP connection named 'nope'" });
    expect(await send({ message: { to: 'a@svc.test', subject: 's', text: 't' } }, '/other')).toMatchObject({ error: 'Forbidden', status: 403 });
  });

  it('/ready checks the ready_check connection; /metrics counts sends per connection and outcome', async () => {
    const ready = await fetch(`${k.admin}/ready`);
    expect(ready.status).toBe(200);
    const samples = parseExposition(await (await fetch(`${k.admin}/metrics`, { headers: { authorization: `Basic ${Buffer.from('admin:admin-test-password').toString('base64')}` } })).text());
    expect(sampleValue(samples, 'svc_connector_up', { kind: 'smtp', connection: 'relay' })).toBe(1);
    expect(sampleValue(samples, 'svc_connector_up', { kind: 'smtp', connection: 'down' })).toBe(0);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'smtp', connection: 'relay', operation: 'send', outcome: 'ok' })).toBeGreaterThanOrEqual(3);
    expect(sampleValue(samples, 'svc_connector_operations_total', { kind: 'smtp', connection: 'relay', operation: 'send', outcome: 'error' })).toBeGreaterThanOrEqual(2);
  });
});
