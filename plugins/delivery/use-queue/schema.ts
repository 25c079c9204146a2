import { z } from 'zod';
import { appliesWhen, listColumn, type Channel, type ConfigIssue, type SvcConfig } from '../../../sdk/plugin/index.ts';

/** Retry, ordering and depth settings of one queue (a channel's, or the background queue's). */
export const deliverySchema = z
  .object({
    max_attempts: z.number().int().min(1).max(100).default(5).describe('Attempts in all, the first included; after the last one the event moves to the dead-letter queue.'),
    base_delay_ms: z.number().int().min(0).max(86_400_000).default(1_000).describe('Backoff before the first retry; doubles per retry.'),
    max_delay_ms: z.number().int().min(0).max(86_400_000).default(60_000).describe('Ceiling of one backoff.'),
    jitter: z.boolean().default(true).describe('Full jitter: each backoff is a random wait between 0 and its ceiling (spreads retries of many events); false waits the ceiling itself.'),
    concurrency: z.number().int().min(1).max(1_000).default(2).describe('Events of this queue running at once; they start in arrival order.'),
    max_depth: z.number().int().min(1).max(10_000_000).default(10_000).describe('Pending and running events the queue holds; past it new events are refused with 503 (never dropped).'),
  })
  .strict();

export type DeliverySettings = z.infer<typeof deliverySchema>;
export const DEFAULT_DELIVERY: DeliverySettings = deliverySchema.parse({});

declare module '../../../sdk/plugin/extensions.ts' {
  interface ChannelFields {
    use_queue?: boolean;
    delivery?: DeliverySettings;
  }
}

export const channelFields = {
  use_queue: listColumn(z.boolean(), 6, 'Use queue')
    .default(false)
    .describe("The request is stored and answered 200 with its CID at once; the service runs from the queue, retried on failure, dead-lettered after its last attempt."),
  delivery: appliesWhen(deliverySchema.optional(), 'use_queue', true).describe('Retries, concurrency and depth of the channel\'s queue (only with use_queue: true); defaults when absent.'),
};

export const optionsSchema = z
  .object({
    background: deliverySchema
      .default(DEFAULT_DELIVERY)
      .describe('Retries, concurrency and depth of background work started with invokeAsync (one queue for all of it).'),
    max_running: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .optional()
      .describe('Queued calls running at once across all queues; default: server.sandbox.workers − 1 (at least 1), so synchronous channels keep a sandbox process to themselves.'),
    stop_wait_ms: z.number().int().min(0).max(600_000).default(5_000).describe('At shutdown, how long running attempts may finish; those still running are run again after the restart.'),
    adopt_every_ms: z
      .number()
      .int()
      .min(100)
      .max(600_000)
      .default(2_000)
      .describe('Several nodes on one database: how often each looks for events whose node is no longer up (plugins.nodes down_after_ms) and takes them over.'),
  })
  .strict()
  .default({ background: DEFAULT_DELIVERY, stop_wait_ms: 5_000, adopt_every_ms: 2_000 });

export type UseQueueOptions = z.infer<typeof optionsSchema>;

/** The settings a channel's events run with: its own, or the defaults. */
export function settingsOf(channel: Channel | undefined): DeliverySettings {
  return channel?.delivery ?? DEFAULT_DELIVERY;
}

/** `delivery` only means something on a queued channel: elsewhere it is a mistake, not a no-op. */
export function validateUseQueue(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  config.channel_rest.forEach((channel, i) => {
    if (channel.delivery !== undefined && channel.use_queue !== true) {
      issues.push({ path: ['channel_rest', i, 'delivery'], message: `channel '${channel.name}' sets delivery without use_queue: true` });
    }
  });
  return issues;
}
