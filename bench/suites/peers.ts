import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { printGrid, versionOf } from '../lib.ts';
import { channelPath, jsonBodyPath, jsonReplyPath } from '../peers/channel.ts';
import { nodeRed } from '../peers/node-red.ts';
import { durablePublish } from '../peers/publish.ts';
import { rabbit } from '../peers/rabbitmq.ts';

/**
 * Issue 14: svc beside the systems users would pick instead, in one run on one machine — bare
 * Fastify and Node-RED for the channel path, RabbitMQ (AMQP, publisher confirms) for durable
 * publish. Node-RED and amqplib are installed on demand into ~/.cache/svc-bench.
 */
export async function run(): Promise<void> {
  const red = nodeRed();
  const broker = await rabbit();
  const root = new URL('../..', import.meta.url);
  printGrid('Peers: versions', ['component', 'version'], [
    ['Node', process.version],
    ['svc commit', execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()],
    ['fastify', versionOf(dirname(createRequire(import.meta.url).resolve('fastify/package.json')))],
    ['Node-RED', red.version],
    ['RabbitMQ server', typeof broker === 'string' ? `— (${broker})` : broker.server],
    ['amqplib', typeof broker === 'string' ? '—' : broker.client],
  ]);
  try {
    await channelPath(red.dir);
    await jsonBodyPath();
    await jsonReplyPath();
    await durablePublish(broker);
  } finally {
    if (typeof broker !== 'string') await broker.close();
  }
}
