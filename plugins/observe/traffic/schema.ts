import { z } from 'zod';
import { scopedRef } from '../../../sdk/plugin/tenants.ts';
import { WINDOW_SECONDS } from './recorder.ts';

export const DEFAULT_RECENT = 1000;

export const trafficOptionsSchema = z
  .object({
    recent: z
      .number()
      .int()
      .min(10)
      .max(100_000)
      .default(DEFAULT_RECENT)
      .describe('How many of the last requests are kept for traffic.recent (a ring in memory; about 100 bytes each).'),
  })
  .strict()
  .default({ recent: DEFAULT_RECENT });

export type TrafficOptions = z.infer<typeof trafficOptionsSchema>;

/** A channel's name: a tenant's administrator writes its own channels' names short (sdk/plugin/tenants.ts). */
const channelName = scopedRef(z.string().min(1).max(200));

export const recentArgsSchema = z
  .object({
    after_seq: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('Only requests recorded after this seq: pass the last_seq of the previous answer to poll for new ones.'),
    channel: channelName.optional().describe('Only requests of this channel (a plugin route counts under its route name).'),
    limit: z.number().int().min(1).max(500).default(100).describe('Most requests returned, newest first.'),
  })
  .strict();

export type RecentArgs = z.infer<typeof recentArgsSchema>;

export const statsArgsSchema = z
  .object({
    channel: channelName.optional().describe('Only this channel; absent: every channel with requests in the window.'),
    seconds: z
      .number()
      .int()
      .min(1)
      .max(WINDOW_SECONDS)
      .default(300)
      .describe(`How far back, in seconds (at most ${WINDOW_SECONDS}, the 15 minutes kept).`),
    step: z
      .number()
      .int()
      .min(1)
      .max(60)
      .default(1)
      .describe('Seconds per point of the series (1: one point per second; 10 suits a 15-minute chart).'),
  })
  .strict();

export type StatsArgs = z.infer<typeof statsArgsSchema>;
