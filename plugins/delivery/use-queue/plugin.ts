import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import '../../capabilities.ts';
import { definePlugin, RUNNER_SERVICE_MARK, SvcError, type Channel, type DurableEvents, type HookFn, type HostCall, type KernelApi, scopedFor } from '../../../sdk/plugin/index.ts';
import type { UseQueueStats } from '../../capabilities.ts';
import { queueCommands } from './cli.ts';
import { queueControls, type ReplayChecks } from './control.ts';
import { Scheduler } from './scheduler.ts';
import { channelFields, optionsSchema, validateUseQueue, type UseQueueOptions } from './schema.ts';
import { QueueTable } from './store.ts';
import { QueuedEventsQuota } from './tenant-quota.ts';

/** The invoke step of a queued channel: the request is stored, then answered 200 `{cid}`; the service runs later. */
function enqueueStep(channel: Channel, scheduler: Scheduler, kernel: KernelApi, quota: QueuedEventsQuota): HookFn {
  const name = channel.name;
  const service = channel.service;
  return async function enqueue(ex) {
    await quota.admit(service);
    // Formats that read no body still get it stored: the service may verify a signature over it.
    await ex.readBody();
    try {
      await scheduler.accept(name, kernel.invokeRequestOf(ex));
    } catch (err) {
      if (err instanceof SvcError && err.code === 'QUEUE_FULL') ex.log.warn({ channel: name, depth: scheduler.depthOf(name) }, 'queue: event refused, the channel queue is full');
      throw err;
    }
    ex.response.contentType = 'application/json; charset=utf-8';
    ex.reply(200, { cid: ex.cid });
  };
}

export const invokeAsyncArgs = z
  .object({
    service: z.string().min(1).max(256).describe('The service to run in the background.'),
    input: z.record(z.string(), z.unknown()).describe('Its ctx.input.'),
  })
  .strict();

function invokeAsyncCall(scheduler: Scheduler, kernel: KernelApi, quota: QueuedEventsQuota): HostCall<z.infer<typeof invokeAsyncArgs>> {
  return {
    op: 'queue.invokeAsync',
    args: invokeAsyncArgs,
    async handler(args, ctx) {
      // A tenant's service queues work for its tenant's services only (docs/tenants.md).
      const service = scopedFor(ctx.service, args.service);
      // Past the tenant's queued_events the calling service sees TooManyRequests (TENANT_QUOTA).
      await quota.admit(service);
      const input = args.input;
      const cid = kernel.newCid();
      try {
        // The work continues the calling request's trace, like a queued channel's events.
        await scheduler.accept(null, ctx.trace ? { service, cid, method: 'POST', input, trace: ctx.trace } : { service, cid, method: 'POST', input });
      } catch (err) {
        // The calling service sees ServiceUnavailable (503 unless it handles it), as for a full pub/sub queue.
        if (err instanceof SvcError && err.code === 'QUEUE_FULL') throw new SvcError('SERVICE_UNAVAILABLE', 'Queue is full');
        throw err;
      }
      ctx.log.debug({ queued: cid, target: service }, 'queue: background work queued');
      return { cid };
    },
  };
}

/** What a queued channel answers, in the channels' OpenAPI document. */
const QUEUED_ANSWER = {
  status: 200,
  description: 'Stored durably; the service runs later from the queue, at least once, retried on failure. Its answer is never sent to the caller.',
  schema: {
    type: 'object',
    required: ['cid'],
    properties: { cid: { type: 'string', description: "The request's correlation ID, which the queued event keeps (the service's ctx.delivery.cid)." } },
  },
};

/** Durable delivery for event sources (sdk/plugin/events.ts): their queues are lanes beside the channels'. */
function durableEvents(scheduler: Scheduler, kernel: KernelApi, replayChecks: ReplayChecks): DurableEvents {
  return {
    declareQueue: (queue, settings) => scheduler.declareQueue(queue, settings),
    async enqueue(tx, queue, event) {
      const request = kernel.eventRequest(event);
      // The runner's event: stored under a name no service answers to (sdk/plugin/events.ts addRunner).
      if (scheduler.runnerOf(queue)) request.service = `${RUNNER_SERVICE_MARK}${event.source}`;
      const { id, committed } = await scheduler.enqueueIn(tx, queue, request);
      return { id, cid: request.cid, committed };
    },
    listen: (prefix, listener) => scheduler.listen({ prefix, ...listener }),
    addRunner: (prefix, run) => scheduler.addRunner(prefix, run),
    refuseReplay: (prefix, check) => void replayChecks.push({ prefix, check }),
    async deadLetter(queue, event, reason) {
      const request = kernel.eventRequest(event);
      const id = await scheduler.deadLetterNow(queue, request, reason);
      return { id, cid: request.cid };
    },
  };
}

interface UseQueueState {
  scheduler: Scheduler;
  quota: QueuedEventsQuota;
}

/** Depths from memory, dead letters from the table (they are not held in memory). */
async function queueStats(scheduler: Scheduler, table: QueueTable): Promise<UseQueueStats> {
  const byChannel = new Map<string | null, UseQueueStats['queues'][number]>();
  for (const lane of scheduler.lanesNow()) byChannel.set(lane.channel, { ...lane, deadLetters: 0 });
  for (const { channel, count } of await table.deadCounts()) {
    const queue = byChannel.get(channel);
    if (queue) queue.deadLetters = Number(count);
    else byChannel.set(channel, { channel, depth: 0, running: 0, deadLetters: Number(count) });
  }
  return { queues: [...byChannel.values()] };
}

/**
 * Which node this is and which are up. One SQLite file serves one node: every other node id in
 * it is an earlier run of this one. On a shared store the nodes plugin says which are up; without
 * it nothing is taken over from other nodes while this one runs (logged).
 */
// Bundled plugins are set up in path order, so plugins/cluster/nodes has provided 'cluster.node' by now.
function nodeIdentity(kernel: KernelApi): { node: string; liveNodes: () => Promise<ReadonlySet<string>> } {
  const cluster = kernel.lookup('cluster.node');
  const node = cluster?.id ?? randomBytes(6).toString('hex');
  if (kernel.store.dialect === 'sqlite') return { node, liveNodes: async () => new Set([node]) };
  if (cluster) return { node, liveNodes: () => cluster.liveNodes() };
  kernel.log.error('use-queue: the nodes plugin is off, so events of a node that died are not taken over by the others (turn plugins.nodes on)');
  return { node, liveNodes: async () => new Set(['*all*']) };
}

export interface UseQueueDeps {
  /** [0, 1), for backoff jitter (tests pass a fixed one). */
  random?: () => number;
}

/** The Use queue: durable delivery with retries and a dead-letter queue, and background work. See README.md. */
export function createUseQueuePlugin(deps: UseQueueDeps = {}) {
  return definePlugin<UseQueueOptions, UseQueueState>({
    name: 'use-queue',
    kind: 'delivery',
    version: '1.0.0',
    sdk: '^1.0.0',
    provides: ['use-queue.stats', 'events.durable'],
    configSchema: optionsSchema,
    contributes: {
      channelFields,
      validateConfig: validateUseQueue,
      channelOpenApi: {
        success: (channel) => (channel.use_queue === true ? QUEUED_ANSWER : undefined),
        responses: (channel) => (channel.use_queue === true ? { 503: 'the channel queue holds delivery.max_depth events (QUEUE_FULL)' } : undefined),
      },
    },
    async setup(kernel, options) {
      const table = await QueueTable.open(kernel.store);
      const identity = nodeIdentity(kernel);
      const scheduler = new Scheduler({
        table,
        run: (req) => kernel.runEvent(req),
        newCid: () => kernel.newCid(),
        clock: kernel.clock,
        log: kernel.log.child({ plugin: 'use-queue' }),
        maxRunning: options.max_running ?? Math.max(1, kernel.server().sandbox.workers - 1),
        background: options.background,
        stopWaitMs: options.stop_wait_ms,
        random: deps.random ?? Math.random,
        // Looked up per run: the tracing plugin is optional.
        tracing: () => kernel.lookup('observe.tracing'),
        ...identity,
        adoptEveryMs: kernel.store.dialect === 'sqlite' ? undefined : options.adopt_every_ms,
      });
      await scheduler.load();
      // Shutdown stops new attempts at once, not after the channel listener has drained.
      kernel.onDrain(() => scheduler.stop());
      const quota = new QueuedEventsQuota(kernel.tenantQuotas, (tenant) => table.queuedOf(tenant), kernel.clock);
      kernel.addHostCall(invokeAsyncCall(scheduler, kernel, quota));
      const replayChecks: ReplayChecks = [];
      for (const op of queueControls(kernel.store, table, scheduler, () => kernel.clock.now(), (name) => kernel.servingVersion(name), replayChecks)) kernel.addControl(op);
      kernel.provide('use-queue.stats', () => queueStats(scheduler, table));
      kernel.provide('events.durable', durableEvents(scheduler, kernel, replayChecks));
      return { scheduler, quota };
    },
    onConfig: (state, config) => state.scheduler.applyConfig(config),
    stop: (state) => state.scheduler.stop(),
    hooks: {
      invoke: ({ channel, state, kernel }) => (channel.use_queue === true ? enqueueStep(channel, state.scheduler, kernel, state.quota) : undefined),
    },
    cli: queueCommands,
  });
}

export default createUseQueuePlugin();
