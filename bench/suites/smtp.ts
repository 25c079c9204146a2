import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort, spawnLogged, startSvcCli, type Running } from '../lib.ts';
import { compareChannels } from '../peers/channel.ts';

/**
 * SMTP connector: mails sent per second. An smtp-server sink in its own process accepts and drops
 * every mail; a bare Fastify route sending one mail through a nodemailer pooled transport (5
 * connections, bench/peers/smtp-bare.ts, its own process) against svc (HTTP channel → service →
 * `mail(name).send`, sent now, pool_size 5), same sink, same load, interleaved rounds.
 */
const BARE = fileURLToPath(new URL('../peers/smtp-bare.ts', import.meta.url));

const SENDER = `import { service, mail } from 'svc/sdk';
const message = { to: 'sink@svc.test', subject: 'Order 42 shipped', text: 'Your order 42 is on its way.\\n', html: '<p>Your order <b>42</b> is on its way.</p>' };
export default service({ async handle() { const sent = await mail('bench').send(message); return { messageId: sent.messageId }; } });
`;

async function startSink(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', BARE, 'sink', String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('LISTENING')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`SMTP sink exited with ${code}`)));
  });
  return child;
}

async function bareSender(sinkPort: number): Promise<Running> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const p = await spawnLogged(['--import', 'tsx', BARE, 'send', String(port), String(sinkPort)], { cwd: process.cwd(), log: '/dev/null', probe: `${url}/mail` });
  return { url, ...p };
}

export async function run(): Promise<void> {
  const sinkPort = await freePort();
  const sink = await startSink(sinkPort);
  try {
    const svcConfig = {
      channel_rest: [{ name: 'mail', url_path: '/mail', service: 'sender', security: 'none' }],
      smtp_connection: [{ name: 'bench', host: '127.0.0.1', port: sinkPort, security: 'none', from: 'bench@svc.test', pool_size: 5 }],
    };
    await compareChannels('SMTP send: one mail (text + html) per request to a local smtp-server sink, pool of 5 connections', [
      { name: 'bare Fastify route, nodemailer pooled transport', note: 'bench/peers/smtp-bare.ts send', path: '/mail', start: () => bareSender(sinkPort), alone: true },
      { name: 'svc HTTP channel → service → mail(name).send', note: 'CLI, default config', path: '/mail', start: () => startSvcCli(svcConfig, { 'sender.ts': SENDER }, '/mail') },
    ]);
  } finally {
    sink.kill('SIGTERM');
  }
}
