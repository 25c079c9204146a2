/**
 * The SMTP bench's peers (bench/suites/smtp.ts), each in its own process:
 *   sink PORT              an smtp-server that accepts every mail and drops it; prints `LISTENING`
 *   send PORT SINK_PORT    what a team would write without svc: a Fastify route GET /mail sending one
 *                          mail through a nodemailer pooled transport (5 connections) to the sink
 */
import Fastify from 'fastify';
import { createTransport } from 'nodemailer';
import { SMTPServer } from 'smtp-server';

const [mode, a, b] = process.argv.slice(2);

export const BENCH_MAIL = { from: 'bench@svc.test', to: 'sink@svc.test', subject: 'Order 42 shipped', text: 'Your order 42 is on its way.\n', html: '<p>Your order <b>42</b> is on its way.</p>' };

if (mode === 'sink') {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      stream.on('data', () => {});
      stream.on('end', () => callback());
    },
  });
  // A client that goes away (a peer stopped between rounds) is not the sink's failure.
  server.on('error', () => {});
  server.listen(Number(a), '127.0.0.1', () => console.log('LISTENING'));
} else if (mode === 'send') {
  const transport = createTransport({ pool: true, maxConnections: 5, host: '127.0.0.1', port: Number(b), secure: false, ignoreTLS: true });
  const app = Fastify();
  app.get('/mail', async () => {
    const info = await transport.sendMail(BENCH_MAIL);
    return { messageId: info.messageId };
  });
  await app.listen({ port: Number(a), host: '127.0.0.1' });
} else if (mode !== undefined) {
  console.error('usage: smtp-bare.ts sink PORT | send PORT SINK_PORT');
  process.exit(2);
}
