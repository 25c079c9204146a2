import { z } from 'zod';
import { SvcError, type ControlOp, type DataStore, type ReplayCheck } from '../../../sdk/plugin/index.ts';
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

export const listArgs = z
  .object({
    channel: channelFilter,
    state: z.enum(['pending', 'running', 'dead']).optional().describe('Only events in this state.'),
    limit: z.number().int().min(1).max(1_000).default(100).describe('Most events returned, oldest first.'),
    after: z.number().int().min(0).optional().describe('Only events with a larger id (paging).'),
  })
  .strict();

export const showArgs = z.object({ id: z.number().int().min(1).describe('The event id.') }).strict();

export const selectorArgs = z
  .object({
    id: z.number().int().min(1).optional().describe('One event, pending or dead.'),
    all: z.literal(true).optional().describe('Every event in `state` (dead by default).'),
    error: z.string().min(1).max(1_000).optional().describe('Events in `state` whose last error contains this text (case-insensitive).'),
    channel: channelFilter,
    state: z.enum(['pending', 'dead']).optional().describe('For all and error: pending or dead events (default dead).'),
  })
  .strict()
  .refine((s) => [s.id !== undefined, s.all === true, s.error !== undefined].filter(Boolean).length === 1, 'name one event (id), all events, or those matching an error');

/** A listed event: its last error only (queue.show has them all). */
export type EventSummary = Omit<EventView, 'errors'> & { lastError: EventView['errors'][number] | null; errorCount: number };

export function summaryOf(e: EventView): EventSummary {
  const { errors, ...rest } = e;
  return { ...rest, lastError: errors.at(-1) ?? null, errorCount: errors.length };
}

export async function listEvents(table: QueueTable, args: z.infer<typeof listArgs>, tenant?: string): Promise<EventSummary[]> {
  return (await table.list({ ...args, tenant })).map(summaryOf);
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

export function queueControls(store: DataStore, table: QueueTable, scheduler: Scheduler, now: () => number, replayChecks: ReplayChecks = []): ControlOp[] {
  const list: ControlOp<z.infer<typeof listArgs>> = { op: 'queue.list', readOnly: true, tenantScoped: true, args: listArgs, handler: (args, caller) => listEvents(table, args, caller?.tenant) };
  const show: ControlOp<z.infer<typeof showArgs>> = { op: 'queue.show', readOnly: true, tenantScoped: true, args: showArgs, handler: ({ id }, caller) => showEvent(table, id, caller?.tenant) };
  const replay: ControlOp<Selector> = {
    op: 'queue.replay',
    tenantScoped: true,
    args: selectorArgs,
    handler: async (selector, caller) => {
      const selected = scheduler.notRunning(await selectEvents(store, selector, caller?.tenant));
      const refused = await refusedReplays(table, selected, replayChecks);
      const chosen = selected.filter((e) => !refused.has(e.id));
      const done = new Set(await table.replay(chosen.map((e) => e.id), now(), scheduler.node));
      const events = chosen.filter((e) => done.has(e.id));
      scheduler.replayed(events);
      const answer: { replayed: number; ids: number[]; refused?: Array<{ id: number; reason: string }> } = { replayed: events.length, ids: events.map((e) => e.id) };
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
