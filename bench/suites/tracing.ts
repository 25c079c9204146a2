import { spawn } from 'node:child_process';
import { freePort, startSvcCli, type Running } from '../lib.ts';
import { bare, compareChannels, HELLO } from '../peers/channel.ts';

const channel = { name: 'hello', url_path: '/hello', service: 'hello', security: 'none' };
const TRACEPARENT = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };

/** A collector stand-in in a process of its own: takes every OTLP/HTTP export and answers 200. */
async function sink(): Promise<{ url: string; stop: () => void }> {
  const port = await freePort();
  const code = `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.writeHead(200, { 'content-type': 'application/json' }).end('{}')); }).listen(${port}, '127.0.0.1', () => console.log('up'));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}

/**
 * The tracing plugin's cost on the channel path: disabled, enabled without an endpoint (the
 * default: only a caller's traceparent is read and passed on), and exporting every request's
 * server span to a local collector stand-in. Every case in the same run, interleaved.
 */
export async function run(): Promise<void> {
  const collector = await sink();
  const svc = (plugins: Record<string, unknown>) => (): Promise<Running> => startSvcCli({ plugins, server: { sandbox: { workers: 1 } }, channel_rest: [channel] }, { 'hello.ts': HELLO }, '/hello');
  const exporting = { tracing: { config: { endpoint: collector.url } } };
  try {
    await compareChannels('Tracing: channel path, 1 sandbox process, tracing off and on', [
      { name: 'bare Fastify hello-world', note: 'bench/server.ts bare', start: bare, alone: true },
      { name: 'svc, tracing plugin disabled', note: 'plugins: { tracing: false }', start: svc({ tracing: false }) },
      { name: 'svc, tracing without export (the default), no traceparent', note: 'default config', start: svc({}) },
      { name: 'svc, tracing without export, with a traceparent', note: 'read and passed on', headers: TRACEPARENT, start: svc({}) },
      { name: 'svc, exporting every request (sampling 1), with a traceparent', note: 'OTLP/HTTP JSON to a local sink', headers: TRACEPARENT, start: svc(exporting) },
    ]);
  } finally {
    collector.stop();
  }
}
