import { SvcError, type DurableRunner, type EventOutcome, type HostCall, type HostCallContext, type KernelApi } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import type { SentMail, SmtpConnection } from './connection.ts';
import { checkMail, mailMessageSchema, nodemailerMessage, sendArgs, type MailMessage, type SendArgs } from './message.ts';
import { connectionForService } from '../shared/access.ts';

/** The Use queue's queue of a connection's queued mails (and of their dead letters). */
export const queueOf = (connection: string): string => `smtp:${connection}`;
export const QUEUE_PREFIX = 'smtp:';

export type ConnectionLookup = (name: string) => SmtpConnection | undefined;

/**
 * Stores the mail in the Use queue (the message only: the connection's settings and password
 * are read when it is sent) and resolves once that is on stable storage.
 */
async function enqueue(kernel: KernelApi, conn: SmtpConnection, message: MailMessage, ctx: HostCallContext): Promise<{ queued: true; cid: string }> {
  const durable = kernel.lookup('events.durable');
  if (!durable) throw new SvcError('SERVICE_UNAVAILABLE', 'queued mail needs the use-queue plugin, which is off');
  const event = { source: 'smtp', name: conn.entry.name, service: ctx.service, input: { message }, ...(ctx.trace ? { trace: ctx.trace } : {}) };
  try {
    const stored = await kernel.store.transaction((tx) => durable.enqueue(tx, queueOf(conn.entry.name), event), { durable: true });
    stored.committed();
    conn.meter.done('queue', 'ok');
    ctx.log.info({ connection: conn.entry.name, queued: stored.cid }, 'SMTP: mail queued');
    return { queued: true, cid: stored.cid };
  } catch (err) {
    conn.meter.done('queue', 'error');
    if (err instanceof SvcError && err.code === 'QUEUE_FULL') throw new SvcError('SERVICE_UNAVAILABLE', `the mail queue of SMTP connection '${conn.entry.name}' is full`);
    throw err;
  }
}

/**
 * `mail.send`: a service sends a mail on a connection of the config, by name, now or through
 * the Use queue. Unknown name: NOT_FOUND; a service not in allowed_services: FORBIDDEN; a mail
 * that fails its checks: BAD_REQUEST, before anything is sent or stored.
 */
export function sendHostCall(kernel: KernelApi, connectionOf: ConnectionLookup): HostCall<SendArgs> {
  return {
    op: 'mail.send',
    args: sendArgs,
    quota: 'outgoing_calls_per_minute',
    async handler(args, ctx): Promise<SentMail | { queued: true; cid: string }> {
      const conn = connectionForService('SMTP', args.connection, connectionOf, (c) => c.entry.allowed_services, ctx);
      checkMail(args.message, conn.entry);
      if (args.options.queue ?? conn.entry.queue_by_default) return enqueue(kernel, conn, args.message, ctx);
      return conn.send(nodemailerMessage(args.message, conn.entry));
    },
  };
}

function failure(err: SvcError, permanent: boolean): EventOutcome {
  return { ok: false, kind: err.code, message: err.details, permanent };
}

/**
 * Sends the queued mails of the queues smtp:<connection> (DurableEvents.addRunner). A refusal
 * for good (5xx, a mail the connection's limits now refuse, a connection no longer configured)
 * goes to the dead-letter queue at once; anything else is retried with the queue's backoff.
 */
export function mailRunner(connectionOf: ConnectionLookup): DurableRunner {
  return async (request) => {
    const name = request.delivery?.source?.name ?? '';
    const conn = connectionOf(name);
    if (!conn) return failure(new SvcError('NOT_FOUND', `No SMTP connection named '${name}' (removed from the config?); replay once it is back`), true);
    const parsed = mailMessageSchema.safeParse(request.input?.message);
    if (!parsed.success) return failure(new SvcError('BAD_REQUEST', 'the stored mail is not a mail message'), true);
    try {
      checkMail(parsed.data, conn.entry);
      const sent = await conn.send(nodemailerMessage(parsed.data, conn.entry));
      return { ok: true, status: 200, body: sent };
    } catch (err) {
      const e = err instanceof SvcError ? err : new SvcError('SERVICE_UNAVAILABLE', err instanceof Error ? err.message : String(err));
      return failure(e, e.code === 'BAD_REQUEST');
    }
  };
}
