import { callHost } from './internal/runtime.ts';

export interface InvokeAsyncOptions {
  /** The request this call belongs to, when several run at once in one service. */
  cid?: string;
}

/**
 * Runs another service later, through the same durable queue as channels with Use queue on:
 * resolves once the event is stored, with the CID the background call runs under (its
 * `ctx.delivery.cid`). That service sees `input` as `ctx.input`, method POST and no channel;
 * it is retried on failure and dead-lettered after its last attempt (see the use-queue plugin).
 * Throws ServiceUnavailable when the background queue is full.
 */
export async function invokeAsync(serviceName: string, input: Record<string, unknown> = {}, options: InvokeAsyncOptions = {}): Promise<string> {
  const reply = (await callHost('queue.invokeAsync', { service: serviceName, input }, options.cid)) as { cid: string };
  return reply.cid;
}
