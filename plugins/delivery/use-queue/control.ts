import { z } from 'zod';
import { SvcError, type ControlOp, type DataStore, type KernelApi, type ReplayCheck } from '../../../sdk/plugin/index.ts';
import { scopedRef, tenantOf } from '../../../sdk/plugin/tenants.ts';
import type { Scheduler } from './scheduler.ts';
import { selectEvents, type EventView, type QueueTable, type Selector } from './store.ts';

/**
 * The operators' actions on queues, as control ops of the running server (`svc queue ...` is a
 * thin client; an admin API can offer the same ops). Events are named by id; a channel filter
 * is a channel name, null for background work, absent for every queue. A tenant's administrators
 * (admin API) see and touch the events of their tenant's services only.
 */

const channelFilter = scopedRef(z.string().min(1).max(200)).nullable().optional().describe("A channel's events; null: background work (invokeAsync); absent: every queue.");
const serviceFilter = scopedRef(z.string().min(1).max(200), { to: ['services'] })
  .optional()
  .describe("One service's events, whichever queue they are in (a tenant's as `<tenant>/<name>`).");

export const listArgs = z
  .object({
    channel: channelFilter,
    service: serviceFilter,
    state: z.enum(['pending', 'running', 'dead']).optional().describe('Only events in this state.'),
    limit: z.number().int().min(1).max(1_000).default(100).describe('Most events returned, oldest first.'),
    after: z.number().int().min(0).optional().describe('Only events with a larger id (paging).'),
  })
  .strict();

export const showArgs = z.object({ id: z.number().int().min(1).describe('The event id.') }).strict();

const selectorFields = {
  id: z.number().int().min(1).optional().describe('One event, pending or dead.'),
  all: z.literal(true).optional().describe('Every event in `state` (dead by default).'),
  error: z.string().min(1).max(1_000).optional().describe('Events in `state` whose last error contains this text (case-insensitive).'),
  channel: channelFilter,
  service: serviceFilter,
  state: z.enum(['pending', 'dead']).optional().describe('For all and error: pending or dead events (default dead).'),
};
const oneSelector = (s: Selector) => [s.id !== undefined, s.all === true, s.error !== undefined].filter(Boolean).length === 1;
const SELECTOR_RULE = 'name one event (id), all events, or those matching an error';

export const selectorArgs = z.object(selectorFields).strict().refine(oneSelector, SELECTOR_RULE);

export const replayArgs = z
  .object({
    ...selectorFields,
    version: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        "Replay against this version of the events' service (its number in services.history): refused (409) unless that version's source is the one serving, so the events run where the operator meant them to; roll back to it first to replay against an earlier one. The events must be of one service.",
      ),
  })
  .strict()
  .refine(oneSelector, SELECTOR_RULE);

/** A listed event: its last error only (queue.show has them all). */
export type EventSummary = Omit<EventView, 'errors'> & { lastError: EventView['errors'][number] | null; errorCount: number };

export function summaryOf(e: EventView): EventSummary {
  const { errors, ...rest } = e;
  return { ...rest, lastError: errors.at(-1) ?? null, errorCount: errors.length };
}

/** When a pending event is next tried: its stored due time, or later while its tenant's quota holds its queue (Scheduler.quotaHoldOf). */
type QuotaHolds = Pick<Scheduler, 'quotaHoldOf'>;

export async function listEvents(table: QueueTable, args: z.infer<typeof listArgs>, tenant?: string, holds?: QuotaHolds): Promise<EventSummary[]> {
  return (await table.list({ ...args, tenant })).map((e) => {
    const summary = summaryOf(e);
    const held = e.state === 'pending' ? holds?.quotaHoldOf(e.channel, e.service) : undefined;
    if (held !== undefined && (e.nextAttemptAt === null || held > Date.parse(e.nextAttemptAt))) summary.nextAttemptAt = new Date(held).toISOString();
    return summary;
  });
}

/** One event with its request; another tenant's is not found, like a missing one. */
export async function showEvent(table: QueueTable, id: number, tenant?: string): Promise<unknown> {
  const event = await table.get(id);
  if (!event || (tenant !== undefined && tenantOf(event.service) !== tenant)) throw new SvcError('NOT_FOUND', `no event ${id}`);
  return event;
}

/** Plugins' refusals of replays, by queue name prefix (DurableEvents.refuseReplay). */
export type ReplayChecks = Array<{ prefix: string; check: ReplayCheck }>;

/** The chosen events a plugin refuses to replay, with why. */
async function refusedReplays(table: QueueTable, chosen: ReadonlyArray<{ id: number; channel: string | null }>, checks: ReplayChecks): Promise<Map<number, string>> {
  const refused = new Map<number, string>();
  for (const e of chosen) {
    const mine = checks.filter((c) => e.channel?.startsWith(c.prefix));
    if (!mine.length) continue;
    const request = await table.storedRequest(e.id);
    const reason = request && mine.map((c) => c.check(request)).find((r) => r !== undefined);
    if (reason !== undefined) refused.set(e.id, reason);
  }
  return refused;
}

/** The events' one service serves `version`, or the replay is refused (the race with a deploy is what the pin is for). */
async function checkVersion(chosen: ReadonlyArray<{ service: string }>, version: number, servingVersion: KernelApi['servingVersion']): Promise<void> {
  const services = [...new Set(chosen.map((e) => e.service))];
  if (services.length > 1) throw new SvcError('BAD_REQUEST', `the events chosen are of ${services.length} services (${services.join(', ')}): replay against a version one service at a time (service)`);
  if (!services.length) return;
  const service = services[0]!;
  const serving = await servingVersion(service);
  // A version deployed again (a rollback) serves under a new number: its source is what counts.
  if (serving?.sameSource.includes(version)) return;
  const now = serving ? `version ${serving.version} serves` : 'it is not deployed';
  throw new SvcError('CONFLICT', `version ${version} of '${service}' is not serving (${now}): roll back to it first (services.rollback), then replay`);
}

export function queueControls(store: DataStore, table: QueueTable, scheduler: Scheduler, now: () => number, servingVersion: KernelApi['servingVersion'], replayChecks: ReplayChecks = []): ControlOp[] {
  const list: ControlOp<z.infer<typeof listArgs>> = { op: 'queue.list', readOnly: true, tenantScoped: true, args: listArgs, handler: (args, caller) => listEvents(table, args, caller?.tenant, scheduler) };
  const show: ControlOp<z.infer<typeof showArgs>> = { op: 'queue.show', readOnly: true, tenantScoped: true, args: showArgs, handler: ({ id }, caller) => showEvent(table, id, caller?.tenant) };
  const replay: ControlOp<z.infer<typeof replayArgs>> = {
    op: 'queue.replay',
    tenantScoped: true,
    args: replayArgs,
    handler: async ({ version, ...selector }, caller) => {
      const selected = scheduler.notRunning(await selectEvents(store, selector, caller?.tenant));
      if (version !== undefined) await checkVersion(selected, version, servingVersion);
      const refused = await refusedReplays(table, selected, replayChecks);
      const chosen = selected.filter((e) => !refused.has(e.id));
      const done = new Set(await table.replay(chosen.map((e) => e.id), now(), scheduler.node));
      const events = chosen.filter((e) => done.has(e.id));
      scheduler.replayed(events);
      const answer: { replayed: number; ids: number[]; version?: number; refused?: Array<{ id: number; reason: string }> } = { replayed: events.length, ids: events.map((e) => e.id) };
      if (version !== undefined) answer.version = version;
      if (refused.size) answer.refused = [...refused].map(([id, reason]) => ({ id, reason }));
      return answer;
    },
  };
  const remove: ControlOp<Selector> = {
    op: 'queue.delete',
    tenantScoped: true,
    args: selectorArgs,
    handler: async (selector, caller) => {
      const chosen = scheduler.notRunning(await selectEvents(store, selector, caller?.tenant));
      const done = new Set(await table.remove(chosen.map((e) => e.id)));
      const events = chosen.filter((e) => done.has(e.id));
      scheduler.removed(events);
      return { deleted: events.length, ids: events.map((e) => e.id) };
    },
  };
  return [list, show, replay, remove];
}
