import { startSvcCli } from '../lib.ts';
import { bare, compareChannels, HELLO } from '../peers/channel.ts';

const channel = { name: 'hello', url_path: '/hello', service: 'hello', security: 'none' };
const svc = (workers: number) => () => startSvcCli({ server: { sandbox: { workers } }, channel_rest: [channel] }, { 'hello.ts': HELLO }, '/hello');

/**
 * Issue 2 and 14: the channel path against bare Fastify in the same run, svc as an operator
 * starts it (CLI, default config, access log to a file), with one and two sandbox processes.
 */
export async function run(): Promise<void> {
  await compareChannels('Kernel: channel path vs bare Fastify (goal ≥ 0.6×, server CPU ≤ 2×)', [
    { name: 'bare Fastify hello-world', note: 'bench/server.ts bare', start: bare, alone: true },
    { name: 'svc channel → sandboxed service, 1 sandbox process', note: 'CLI, default config', start: svc(1) },
    { name: 'svc channel → sandboxed service, 2 sandbox processes (the default)', note: 'CLI, default config', start: svc(2) },
  ]);
}
