/**
 * The SMTP server the mail suites send to (started by scripts/test-servers.sh on 127.0.0.1:2525):
 * smtp-server speaking the protocol, AUTH PLAIN/LOGIN (any user, password svc-test) and STARTTLS
 * with the test certificate, handing every mail it accepts to Dovecot over LMTP (127.0.0.1:10024),
 * so that a mail svc sends arrives in the IMAP mailbox of each recipient. Messages up to 60 MB.
 * A recipient whose local part is `reject-451` is refused with a temporary error, one
 * `reject-550` for good: the suites' way to see how the connector answers each.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTransport } from 'nodemailer';
import { SMTPServer } from 'smtp-server';

const dir = process.env.SVC_TEST_SERVERS ?? '/tmp/svc-test-servers';
const port = Number(process.env.SVC_TEST_SMTP_PORT ?? 2525);
const lmtp = createTransport({ lmtp: true, host: '127.0.0.1', port: 10024, ignoreTLS: true, pool: true, maxConnections: 4 } as never);
let delivered = 0;

const server = new SMTPServer({
  key: readFileSync(join(dir, 'tls.key')),
  cert: readFileSync(join(dir, 'tls.crt')),
  authMethods: ['PLAIN', 'LOGIN'],
  authOptional: true,
  size: 60 * 1024 * 1024,
  logger: false,
  onAuth(auth, _session, callback) {
    if (auth.password === 'svc-test') callback(null, { user: auth.username });
    else callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
  },
  onRcptTo(address, _session, callback) {
    const local = address.address.split('@')[0];
    if (local === 'reject-451') return callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
    if (local === 'reject-550') return callback(Object.assign(new Error('No such user'), { responseCode: 550 }));
    callback();
  },
  onData(stream, session, callback) {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      if ((stream as unknown as { sizeExceeded?: boolean }).sizeExceeded) {
        callback(Object.assign(new Error('Message too large'), { responseCode: 552 }));
        return;
      }
      const raw = Buffer.concat(chunks);
      const to = session.envelope.rcptTo.map((r) => r.address);
      const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
      lmtp.sendMail({ envelope: { from, to }, raw }, (err) => {
        if (err) {
          process.stderr.write(`LMTP delivery failed: ${err.message}\n`);
          callback(Object.assign(new Error('Delivery failed'), { responseCode: 451 }));
        } else {
          delivered++;
          callback();
        }
      });
    });
  },
});

server.on('error', (err) => process.stderr.write(`smtp relay: ${err.message}\n`));
server.listen(port, '127.0.0.1', () => process.stdout.write(`smtp relay on 127.0.0.1:${port}, delivering to LMTP 127.0.0.1:10024\n`));
setInterval(() => process.stdout.write(`delivered ${delivered}\n`), 60_000).unref();
