import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, startCli, type CliServer } from '../helpers/cli.ts';
import { IMAP, SERVERS_DIR, SMTP, testServers, uniqueMailUser } from '../helpers/servers.ts';
import { PG_URL } from '../helpers/store.ts';

/**
 * Mail as a user meets it, over the CLI and real sockets: a REST call makes a service send a mail
 * with an attachment through the SMTP relay (STARTTLS with the test CA, login with a password from
 * the environment); the relay delivers it to Dovecot; a channel_imap on the recipient's INBOX
 * (STARTTLS too) runs a service that writes what it got to PostgreSQL, which the test reads back
 * over HTTP. Each mail runs once, a restart runs nothing again, and a queued send arrives as well.
 */
const id = randomBytes(4).toString('hex');
const RUNS = `e2e_mail_runs_${id}`;
const CA = join(SERVERS_DIR, 'tls.crt');
const user = uniqueMailUser('e2e');

const CONFIG = `
server:
  port: 0
sql_connection:
  - { name: runs_db, engine: postgresql, url: '${PG_URL}', pool_size: 2 }
smtp_connection:
  - name: notify
    host: ${SMTP.host}
    port: ${SMTP.port}
    security: starttls
    tls: { ca_file: '${CA}' }
    username: shop@svc.test
    password: \${SMTP_PASSWORD}
    from: 'Shop <shop@svc.test>'
    delivery: { max_attempts: 3, base_delay_ms: 200, max_delay_ms: 1000 }
channel_imap:
  - name: inbox
    host: ${IMAP.host}
    port: ${IMAP.port}
    security: starttls
    tls: { ca_file: '${CA}' }
    username: '${user}'
    password: \${IMAP_PASSWORD}
    service: record-mail
    poll_interval_ms: 500
    ready_check: true
channel_rest:
  - { name: send, url_path: /send, service: send-mail, method: POST, security: none }
  - { name: runs, url_path: /runs, service: read-runs, method: GET, security: none }
`;

const SERVICES = {
  'send-mail.ts': `import { service, t, mail } from 'svc/sdk';
export default service({
  input: { subject: t.string(), queue: t.boolean() },
  async handle(ctx) {
    return mail('notify').send({
      to: '${user}',
      subject: ctx.input.subject,
      text: 'Invoice attached.',
      attachments: [{ filename: 'invoice.csv', content: 'id,total\\n' + ctx.input.subject + ',42\\n', contentType: 'text/csv' }],
    }, { queue: ctx.input.queue });
  },
});
`,
  'record-mail.ts': `import { service, sql } from 'svc/sdk';
export default service({
  async handle(ctx) {
    const p = ctx.payload;
    const a = p.attachments[0];
    await sql('runs_db').query(
      "INSERT INTO ${RUNS} (subject, uid, sender, filename, content) VALUES ($1, $2, $3, $4, convert_from(decode($5, 'base64'), 'UTF8'))",
      [p.subject, p.uid, p.from ? p.from.address : null, a ? a.filename : null, a ? a.content : null],
    );
    return {};
  },
});
`,
  'read-runs.ts': `import { service, sql } from 'svc/sdk';
export default service({
  async GET() {
    const r = await sql('runs_db').query('SELECT subject, uid, sender, filename, content FROM ${RUNS} ORDER BY n');
    return { runs: r.rows };
  },
});
`,
};

interface Run {
  subject: string;
  uid: number;
  sender: string;
  filename: string;
  content: string;
}

const pgClient = new pg.Client({ connectionString: PG_URL });
beforeAll(async () => {
  await testServers();
  await pgClient.connect();
  await pgClient.query(`CREATE TABLE ${RUNS} (n SERIAL PRIMARY KEY, subject TEXT NOT NULL, uid INT NOT NULL, sender TEXT, filename TEXT, content TEXT)`);
}, 60_000);
afterAll(async () => {
  await pgClient.query(`DROP TABLE IF EXISTS ${RUNS}`).catch(() => {});
  await pgClient.end().catch(() => {});
});

let server: CliServer | undefined;
afterEach(async () => {
  if (server?.proc.exitCode === null) await server.stop();
  server = undefined;
});

const ENV = { SMTP_PASSWORD: SMTP.password, IMAP_PASSWORD: IMAP.password };
const send = (subject: string, queue: boolean) => fetch(`${server!.url}/send`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ subject, queue }) });
const runs = async () => ((await (await fetch(`${server!.url}/runs`)).json()) as { runs: Run[] }).runs;
const inboxUp = async () => ((await (await fetch(`${server!.url}/ready`)).json()) as { connections: Array<{ name: string; state: string }> }).connections.find((c) => c.name === 'inbox')?.state === 'up';

describe('mail end to end over the CLI (SMTP relay → Dovecot → channel_imap)', () => {
  it('a sent mail with an attachment runs the inbound service once; a restart runs nothing again; a queued mail arrives too', async () => {
    const dir = makeProject(CONFIG, SERVICES);
    server = await startCli(dir, ENV);
    await expect.poll(inboxUp, { timeout: 15_000 }).toBe(true);

    const sent = await send('direct-1', false);
    expect(sent.status).toBe(200);
    expect(await sent.json()).toMatchObject({ accepted: [user], rejected: [] });
    await expect.poll(async () => (await runs()).length, { timeout: 20_000 }).toBe(1);
    expect(await runs()).toEqual([{ subject: 'direct-1', uid: expect.any(Number), sender: 'shop@svc.test', filename: 'invoice.csv', content: 'id,total\ndirect-1,42\n' }]);

    // Restarted: the mail is known as done (seen, and its UID in the store): nothing runs again.
    expect(await server.stop()).toBe(0);
    server = await startCli(dir, ENV);
    await expect.poll(inboxUp, { timeout: 15_000 }).toBe(true);
    // Several rounds of the 500 ms poll pass without a second run.
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await runs()).map((r) => r.subject)).toEqual(['direct-1']);

    // Queued: stored in the Use queue, sent from there through the relay, run once on arrival.
    const queued = await send('queued-1', true);
    expect(queued.status).toBe(200);
    expect(await queued.json()).toMatchObject({ queued: true, cid: expect.any(String) });
    await expect.poll(async () => (await runs()).length, { timeout: 20_000 }).toBe(2);
    await new Promise((r) => setTimeout(r, 1_500));
    const all = await runs();
    expect(all.map((r) => r.subject)).toEqual(['direct-1', 'queued-1']);
    expect(all[1]).toMatchObject({ filename: 'invoice.csv', content: 'id,total\nqueued-1,42\n' });
    expect(new Set(all.map((r) => r.uid)).size).toBe(2);
  }, 90_000);
});
