import type { ImapFlow } from 'imapflow';
import type { Logger } from 'pino';
import { ConnectionMeter, type KernelApi } from '../../../sdk/plugin/index.ts';
import { Nap, reconnectDelayMs } from '../shared/backoff.ts';
import { InboundPipeline, type Disposition } from '../shared/inbound.ts';
import { accountOf, connectClient, safeReason } from './client.ts';
import { parseHeadersOnly, parseMail, serviceHeaders } from './mail.ts';
import type { ChannelLease } from './lease.ts';
import { applyAction, download, ensureFolder, headerBlock, newUids, sizes } from './mailbox.ts';
import type { ChannelImapEntry } from './schema.ts';
import type { ImapTables, MailboxKey, MailboxMark, PendingAction } from './store.ts';

export type ChannelState = 'idle' | 'connecting' | 'up' | 'down';

/** How long shutdown waits for the message being run to settle before closing the connection. */
const DRAIN_WAIT_MS = 10_000;

/**
 * One channel_imap entry: a connection to the mailbox kept open (reconnected with backoff),
 * waiting for new messages with IDLE and polling, and running each new message, in UID order,
 * one at a time, through the inbound pipeline. The order of one message, which is what makes it
 * run once and never get lost (docs/decisions/imap.md):
 *   1. run it (or store it in the Use queue, or dead-letter it): nothing is recorded before;
 *   2. record it done in the store, durably: last_uid moves to it, its server action pending;
 *   3. do the action on the server (flag, move, delete), then drop the pending row.
 * Stopped or cut off before 2: it is new again at the next round. Between 2 and 3: the next
 * round finishes the action and does not run it again.
 * Across nodes, only the holder of the channel's lease (lease.ts) connects; the others stand by,
 * and a holder that loses the lease stops between messages.
 */
export class ImapChannel {
  state: ChannelState = 'idle';
  reason: string | undefined = 'not started';
  /** Another node holds the channel: this one waits (not counted by ready_check). */
  standby = false;
  readonly meter: ConnectionMeter;
  readonly pipeline: InboundPipeline;
  private readonly stop = new AbortController();
  private readonly account: string;
  private loopDone: Promise<void> = Promise.resolve();
  private client: ImapFlow | undefined;
  private mark: MailboxMark | undefined;
  private poked = false;
  private readonly nap = new Nap();

  constructor(
    readonly entry: ChannelImapEntry,
    private readonly kernel: KernelApi,
    private readonly tables: ImapTables,
    private readonly log: Logger,
    private readonly lease: ChannelLease,
    private readonly random: () => number = Math.random,
  ) {
    this.meter = new ConnectionMeter(kernel.clock);
    this.account = accountOf(entry);
    this.pipeline = new InboundPipeline(
      { source: 'imap', name: entry.name, service: entry.service, data_format: 'json', delivery: entry.delivery, deadLetter: 'svc' },
      { kernel, meter: this.meter, log, stop: this.stop.signal },
    );
  }

  private get stopped(): boolean {
    return this.stop.signal.aborted;
  }

  start(): void {
    this.pipeline.declare();
    this.state = 'connecting';
    this.reason = undefined;
    this.loopDone = this.loop();
  }

  /** Shutdown: no new message starts; the one running settles (bounded); the connection closes. */
  async drain(): Promise<void> {
    this.stop.abort();
    this.nap.wake();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.loopDone, new Promise((r) => (timer = setTimeout(r, DRAIN_WAIT_MS)))]);
    clearTimeout(timer);
    this.client?.close();
    await this.loopDone;
    await this.lease.release();
    this.standby = false;
    this.state = 'idle';
    this.reason = 'stopped';
  }

  private async loop(): Promise<void> {
    let attempt = 0;
    let everUp = false;
    while (!this.stopped) {
      if (!(await this.takeLease())) {
        await this.nap.sleep(this.lease.lookEveryMs);
        continue;
      }
      let client: ImapFlow | undefined;
      try {
        client = await connectClient(this.entry, this.kernel);
        this.client = client;
        const lost = new Promise<void>((resolve) => client!.once('close', () => resolve()));
        await this.prepare(client);
        if (everUp) this.meter.reconnects++;
        everUp = true;
        attempt = 0;
        this.state = 'up';
        this.reason = undefined;
        this.meter.done('connect', 'ok');
        this.log.info({ channel: this.entry.name, mailbox: this.entry.mailbox }, 'IMAP channel watching its mailbox');
        await this.watch(client, lost);
        if (!this.stopped) this.log.warn({ channel: this.entry.name, holder: this.lease.holderName }, 'IMAP channel: lease lost to another node (or not renewed in time); standing by');
      } catch (err) {
        if (this.stopped) break;
        this.reason = safeReason(err);
        if (this.state !== 'up') this.meter.done('connect', 'error');
        this.state = this.state === 'up' ? 'connecting' : 'down';
        this.log.warn({ channel: this.entry.name, reason: this.reason, err: String((err as Error)?.message ?? err).slice(0, 200) }, 'IMAP channel: connection failed or lost; reconnecting');
      } finally {
        this.client = undefined;
        if (client?.usable) await client.logout().catch(() => client?.close());
        else client?.close();
      }
      if (this.stopped) break;
      if (this.lease.held()) await this.nap.sleep(reconnectDelayMs(this.entry.reconnect, ++attempt, this.random));
    }
  }

  /** Takes (or keeps) the channel's lease; false while another node holds it or the store does not answer. */
  private async takeLease(): Promise<boolean> {
    if (this.lease.held()) return true;
    let ok: boolean;
    try {
      ok = await this.lease.claim();
    } catch {
      this.standby = false;
      this.state = 'down';
      this.reason = 'store unreachable: cannot take the channel lease';
      return false;
    }
    if (!ok) {
      this.standby = true;
      this.state = 'idle';
      this.reason = `standby: node ${this.lease.holderName ?? '?'} works this channel`;
      return false;
    }
    this.standby = false;
    this.state = 'connecting';
    this.reason = undefined;
    // What other nodes did meanwhile is in the store: read the mailbox's mark afresh.
    this.mark = undefined;
    this.lease.keep(() => this.nap.wake());
    this.log.info({ channel: this.entry.name }, 'IMAP channel: this node holds the lease');
    return true;
  }

  /** Selects the mailbox and makes the folders messages move to. */
  private async prepare(client: ImapFlow): Promise<void> {
    await ensureFolder(client, this.entry.error_folder);
    if (this.entry.after_success.folder) await ensureFolder(client, this.entry.after_success.folder);
    await client.mailboxOpen(this.entry.mailbox);
    client.on('exists', () => this.poke());
  }

  private async watch(client: ImapFlow, lost: Promise<void>): Promise<void> {
    while (!this.stopped && this.lease.held()) {
      const key = await this.keyNow(client);
      const more = await this.round(client, key);
      if (this.stopped) return;
      if (!more && this.lease.held()) await this.waitForMail(client, lost);
      if (!client.usable) throw Object.assign(new Error('connection closed by the server'), { code: 'NoConnection' });
    }
  }

  /** The selected mailbox's key; its mark read (or created) when the UIDVALIDITY is new to us. */
  private async keyNow(client: ImapFlow): Promise<MailboxKey> {
    const box = client.mailbox;
    if (!box) throw new Error('mailbox closed by the server');
    const key: MailboxKey = { channel: this.entry.name, account: this.account, uidValidity: String(box.uidValidity) };
    if (this.mark && this.markOf === key.uidValidity) return key;
    const mark = await this.tables.mark(key, box.uidNext, this.kernel.clock.now());
    if (mark.renumbered) this.log.warn({ channel: this.entry.name, uid_validity: key.uidValidity }, 'IMAP mailbox renumbered (UIDVALIDITY changed): its unseen messages are taken as new, seen ones as done');
    this.mark = mark;
    this.markOf = key.uidValidity;
    return key;
  }

  private markOf: string | undefined;

  /** Finishes pending server actions, then runs up to `batch` new messages. True when more wait. */
  private async round(client: ImapFlow, key: MailboxKey): Promise<boolean> {
    for (const p of await this.tables.pending(key)) {
      if (this.stopped) return false;
      await this.finish(client, key, p);
    }
    const uids = await newUids(client, this.mark as MailboxMark);
    const batch = uids.slice(0, this.entry.batch);
    const sized = await sizes(client, batch);
    for (const uid of batch) {
      if (this.stopped || !this.lease.held()) return false;
      const size = sized.get(uid);
      if (size === undefined) continue; // expunged meanwhile: nothing to run
      const d = await this.runOne(client, uid, size);
      // Not done with (svc stopping, the store refused it): it stays new and runs again later, in order.
      if (d === undefined || d.action !== 'ack') return false;
      const pending: PendingAction = d.outcome === 'dead_letter' ? { uid, action: 'move', folder: this.entry.error_folder } : { uid, action: this.entry.after_success.action, folder: this.entry.after_success.folder ?? null };
      await this.tables.done(key, pending, this.kernel.clock.now());
      (this.mark as MailboxMark).lastUid = Math.max((this.mark as MailboxMark).lastUid, uid);
      await this.finish(client, key, pending);
    }
    return uids.length > batch.length;
  }

  /** One message: size-checked, downloaded, parsed, through the pipeline. undefined: gone meanwhile. */
  private async runOne(client: ImapFlow, uid: number, size: number): Promise<Disposition | undefined> {
    const at = { uid, mailbox: this.entry.mailbox, size };
    if (size > this.entry.max_message_bytes) {
      const head = await headerBlock(client, uid);
      const payload = await parseHeadersOnly(head, at);
      const message = `message of ${size} bytes is above max_message_bytes (${this.entry.max_message_bytes}): not downloaded; its headers are kept`;
      return this.pipeline.refuse({ body: head, headers: serviceHeaders(payload), payload }, { kind: 'MessageTooLarge', message });
    }
    const source = await download(client, uid);
    if (source === undefined) return undefined;
    const parsed = await parseMail(source, { ...at, maxAttachmentBytes: this.entry.max_attachment_bytes });
    const message = { body: source, headers: serviceHeaders(parsed.payload), payload: parsed.payload, ...(parsed.payload.date ? { at: parsed.payload.date } : {}) };
    return parsed.ok ? this.pipeline.handle(message) : this.pipeline.refuse(message, parsed.refusal);
  }

  /**
   * The server action of a message done with. Refused by the server (a folder gone): it stays
   * pending and is tried at every round, the message left where it is; the connection lost: the
   * round ends here and the next connection tries again.
   */
  private async finish(client: ImapFlow, key: MailboxKey, p: PendingAction): Promise<void> {
    try {
      await applyAction(client, p);
    } catch (err) {
      this.meter.done('dispose', 'error');
      if (!client.usable) throw err;
      this.log.warn({ channel: this.entry.name, uid: p.uid, action: p.action, folder: p.folder }, `IMAP: ${(err as Error).message}; tried again at the next round`);
      return;
    }
    await this.tables.settled(key, p.uid);
  }

  private poke(): void {
    this.poked = true;
    this.nap.wake();
  }

  /** Until the server tells of a new message (IDLE), the poll interval passes, or the connection goes. */
  private async waitForMail(client: ImapFlow, lost: Promise<void>): Promise<void> {
    if (this.poked) {
      this.poked = false;
      return;
    }
    const useIdle = this.entry.idle && client.capabilities.has('IDLE');
    const napping = this.nap.sleep(this.entry.poll_interval_ms, lost);
    // IDLE ends by itself when our next command is sent; a failed IDLE leaves the poll to find mail.
    if (useIdle) void client.idle().catch(() => {});
    await napping;
    this.poked = false;
  }
}
