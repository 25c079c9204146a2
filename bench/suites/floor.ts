import { channelFloor } from '../peers/channel.ts';

/**
 * Issue 14: the channel path against its floor. svc's kernel runs with stand-in sandbox processes
 * (bench/peers/standins/) so the run shows what the crossing to another process, and isolated-vm's
 * least work per batch, cost before any of svc's sandbox code runs.
 */
export async function run(): Promise<void> {
  await channelFloor();
}
