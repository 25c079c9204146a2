import type { DeliveryInfo, InvokeRequest, TraceContext } from '../internal/invoke-request.ts';
import type { Queryable } from './store.ts';
import './capabilities.ts';

/**
 * Event sources: plugins that start services by something other than an HTTP request (the
 * scheduler's ticks; broker messages, mail and files next). A source hands the kernel a
 * SourceEvent; the kernel turns it into the one kind of request a service knows
 * (`KernelApi.eventRequest`) and runs it through the same path as a channel's call
 * (`KernelApi.runEvent`: the sandbox call, its limits, logs, metrics and trace), or, when the
 * source wants durability, hands it to the `events.durable` capability (the Use queue), which
 * stores it and runs it the same way, with retries, dead letters and replay.
 *
 * The kernel knows no source by name: to it a source is a string on the event.
 */
export interface SourceEvent {
  /** The plugin that produced it, e.g. `scheduler` (logs, metrics, `ctx.delivery.source.kind`). */
  source: string;
  /** What fired inside that source: a job's name, a queue, a mailbox (`ctx.delivery.source.name`). */
  name: string;
  service: string;
  /**
   * The service's `ctx.input`: checked against its typed input model as a channel's would be.
   * When absent, a payload that is an object gives its fields, as a channel's JSON body does.
   */
  input?: Record<string, unknown>;
  /** The service's `ctx.payload`: a message's body as its data format decoded it (KernelApi.decodeMessage). SDK 1.8. */
  payload?: unknown;
  /** The input's values are text (XML, form, HL7): converted to the model's declared types. SDK 1.8. */
  textFields?: boolean;
  /** The bytes themselves, the service's `ctx.rawBody` (the `none` format). SDK 1.8. */
  rawBody?: Buffer;
  /** The service's `ctx.headers`: a message's properties and headers, names lower-case. SDK 1.8. */
  headers?: Record<string, string>;
  /** The event's correlation ID; a fresh one when absent. */
  cid?: string;
  /** W3C trace context to continue (a broker message's headers); a new trace when absent. */
  trace?: TraceContext;
  /** When the event happened (a tick's time, a message's date): ISO 8601 (`ctx.delivery.source.at`). */
  at?: string;
}

/** How a run of an event ended, as a source reads it (history, metrics, acknowledgements). */
export type EventOutcome =
  | { ok: true; status: number; body?: unknown }
  | {
      ok: false;
      /** A service error class (BadRequest, Error...), an error code (SERVICE_TIMEOUT...) or Interrupted. */
      kind: string;
      message: string;
      /** Running it again cannot help (the input is refused, the service is missing). */
      permanent: boolean;
      /** When the refusal said another attempt may pass (a tenant's quota: its Retry-After), ms from now. */
      retryAfterMs?: number;
    };

/** Retry, ordering and depth settings of a source's durable queue (the Use queue's `delivery` settings). */
export interface DurableQueueSettings {
  max_attempts: number;
  base_delay_ms: number;
  max_delay_ms: number;
  jitter: boolean;
  /** Events of the queue running at once on one node. */
  concurrency: number;
  max_depth: number;
}

/** One attempt of a durable event, as the queue reports it to the source that stored it. */
export interface DurableAttempt {
  queue: string;
  /** The event's id in the queue. */
  id: number;
  /** The event's CID (the same on every attempt); `attemptCid` is this attempt's. */
  cid: string;
  attemptCid: string;
  attempt: number;
  /** Milliseconds since the epoch. */
  startedAt: number;
}

export interface DurableSettlement extends DurableAttempt {
  endedAt: number;
  outcome: EventOutcome;
  /** What follows: `done` (it succeeded), `retry` (it runs again later), `dead` (moved to the dead-letter queue). */
  next: 'done' | 'retry' | 'dead';
}

/**
 * Durable delivery for event sources (provided by the Use queue, plugins/delivery/use-queue).
 * Queue names are the source's own (`scheduler:nightly`); they share the events table, the
 * operators' `svc queue` commands, replay and dead letters with channels' queues.
 */
export interface DurableEvents {
  /**
   * Declares a queue's settings (again on every config; a queue never declared runs with the
   * defaults). Events already stored keep running under the new settings.
   */
  declareQueue(queue: string, settings: Partial<DurableQueueSettings>): void;
  /**
   * Stores the event inside `tx`, a transaction on `kernel.store` that the caller commits with
   * what it records beside it (a claimed tick): both are stored or neither is. Call `committed`
   * once the transaction committed: the event then runs on this node. A node that stops before
   * that leaves a stored event that the queue runs at its next start or another node takes over.
   * Refused with QUEUE_FULL when the queue holds max_depth events.
   */
  enqueue(tx: Queryable, queue: string, event: SourceEvent): Promise<{ id: number; cid: string; committed(): void }>;
  /**
   * Listens to attempts of events in queues whose name starts with `prefix`, on the node that
   * runs them. `started` is told after an attempt began (best effort). `settled` runs inside the
   * transaction that records the attempt's end (the event deleted, rescheduled or dead-lettered):
   * what it writes with `tx` is stored with that end or not at all. What it returns is called
   * once that transaction committed (the `committed` of an event it enqueued with `tx`).
   */
  listen(prefix: string, listener: DurableListener): void;
  /**
   * Stores the event straight in the dead-letter queue of `queue`, with why, where operators see,
   * replay and delete it as any dead letter (a message a source gave up on without the queue
   * running it: undecodable, or failed its retries in place). SDK 1.8.
   */
  deadLetter(queue: string, event: SourceEvent, reason: { kind: string; message: string; attempts: number }): Promise<{ id: number; cid: string }>;
  /**
   * Runs the events of queues whose name starts with `prefix` with `run`, a host function of the
   * plugin (sending a mail), instead of a service. Register it before the first `enqueue` in
   * such a queue (setup or the first onConfig): an event enqueued while a runner claims its queue
   * is stored as the runner's (its service is `@<source>`), and such an event never runs as a
   * service: an attempt that finds no runner (a restart before the plugin registered it, the
   * plugin turned off) is put back without counting and waits for it. `run`'s outcome settles
   * the attempt as a service's would (retry with backoff, dead letter when permanent or after
   * the last attempt); replay runs it again. SDK 1.9.
   */
  addRunner(prefix: string, run: DurableRunner): void;
  /**
   * Operators' replays (`queue.replay`) of events in queues whose name starts with `prefix` ask
   * `check` first: a reason leaves the event as it is (dead) and is answered beside the replayed
   * ones. For dead letters stored without what their run needs (a file too big to read). SDK 1.9.
   */
  refuseReplay?(prefix: string, check: ReplayCheck): void;
}

/** Why a stored event must not run again on replay, or undefined when it may. */
export type ReplayCheck = (request: InvokeRequest) => string | undefined;

/** A plugin's host function that runs the events of its durable queues (DurableEvents.addRunner). */
export type DurableRunner = (request: InvokeRequest) => Promise<EventOutcome>;

/** The service name of an event stored as a runner's: `@<source>`, which no service file can be asked to run. */
export const RUNNER_SERVICE_MARK = '@';

export interface DurableListener {
  started?(attempt: DurableAttempt): void;
  settled(tx: Queryable, settlement: DurableSettlement): Promise<void | (() => void)>;
}

/** Where a run came from, as the service reads it in `ctx.delivery.source`. */
export type EventSourceInfo = NonNullable<DeliveryInfo['source']>;

declare module './capabilities.ts' {
  interface Capabilities {
    /** Durable delivery for event sources (see DurableEvents); provided by the Use queue. */
    'events.durable': DurableEvents;
  }
}

export type { InvokeRequest };
