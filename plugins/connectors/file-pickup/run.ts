import type { Logger } from 'pino';
import { MessageFormatError, SvcError, type ConnectionMeter, type KernelApi, type SourceEvent } from '../../../sdk/plugin/index.ts';
import type { FileFolder, Timing } from '../../capabilities.ts';
import { inboundQueueName, type InboundChannel, type InboundPipeline } from '../shared/inbound.ts';
import type { ClaimRow, ClaimTable, FileKey } from './claims.ts';
import type { Found } from './listing.ts';
import { printable } from './local-folder.ts';
import type { ChannelFileEntry } from './schema.ts';

/** What a file channel's runs need from the plugin (channel.ts builds it). */
export interface ChannelDeps {
  kernel: KernelApi;
  log: Logger;
  claims: ClaimTable;
  identity: () => Identity;
  /** Opens the channel's folder for one poll (local, or a session on the SFTP server). */
  open: () => Promise<FileFolder>;
  timing: Timing | { error: string };
}

/** Marks a dead letter stored without the file's content (too large): its replay is refused with this header's text. */
export const NOT_READ_HEADER = 'file-not-read';

/** This node, and (on a store several nodes share) who is alive. */
export interface Identity {
  node: string;
  liveNodes: (() => Promise<ReadonlySet<string>>) | undefined;
}

/**
 * One file from claim to move: claim it (or take over a claim its dead node left), read it,
 * run the service in place or store it in the Use queue in the claim's transaction, record the
 * outcome in the claim, then move it to done_folder or error_folder. A step that fails leaves the
 * claim saying how far the file got, so nothing is run twice that ran to its end.
 */
export class FileRun {
  constructor(
    private readonly entry: ChannelFileEntry,
    private readonly channel: InboundChannel,
    private readonly pipeline: InboundPipeline,
    private readonly deps: ChannelDeps,
    private readonly pickups: ConnectionMeter,
    private readonly stop: AbortSignal,
  ) {}

  declare(): void {
    this.pipeline.declare();
  }

  private get queue(): string {
    return inboundQueueName(this.channel);
  }

  /** Whether this node took the file (false: another node has it, or it went meanwhile). */
  async take(folder: FileFolder, key: FileKey, found: Found): Promise<boolean> {
    const { claims, kernel } = this.deps;
    const me = this.deps.identity();
    if (!(await claims.claim(key, me.node, 'running', kernel.clock.now()))) {
      const row = await claims.get(key);
      if (!row || row.state !== 'running' || !(await this.isDead(row.node, me))) return false;
      if (!(await claims.takeOver(key, row.node, me.node, kernel.clock.now()))) return false;
      this.deps.log.warn({ channel: this.entry.name, file: printable(key.path), from: row.node }, 'file pickup: taking over a file whose node stopped mid-run; its service may run again for it');
    }
    let body: Buffer;
    try {
      body = await folder.read(key.path, this.entry.max_file_bytes);
    } catch (err) {
      if (err instanceof SvcError && err.code === 'PAYLOAD_TOO_LARGE') return this.tooLarge(folder, key, found, err.details);
      // Gone, changed or the connection dropped: not taken; the next poll sees it again.
      await claims.release(key, me.node);
      if (err instanceof SvcError && err.code === 'NOT_FOUND') return false;
      throw err;
    }
    if (body.length !== key.size) {
      await claims.release(key, me.node);
      return false;
    }
    const event = this.eventOf(key, found, folder);
    if (this.entry.delivery.use_queue) return this.enqueue(folder, key, event, body);
    const disposition = await this.pipeline.handle({ body, headers: event.headers!, at: event.at! });
    if (disposition.action !== 'ack') {
      await claims.release(key, me.node);
      return false;
    }
    await claims.setState(key, disposition.outcome === 'ok' ? 'done' : 'failed', disposition.outcome === 'ok' ? null : 'dead-lettered');
    this.meter(disposition.outcome === 'ok' ? 'ok' : 'dead_letter');
    await this.moveAway(folder, { ...key, state: disposition.outcome === 'ok' ? 'done' : 'failed' });
    return true;
  }

  private meter(outcome: string): void {
    this.pickups.done('pickup', outcome);
  }

  private async isDead(node: string, me: Identity): Promise<boolean> {
    if (node === me.node) return false;
    // One node per SQLite file: a claim of another node id is from before this start.
    if (!me.liveNodes) return true;
    return !(await me.liveNodes()).has(node);
  }

  private eventOf(key: FileKey, found: Found, folder: FileFolder): SourceEvent {
    const at = new Date(key.mtime).toISOString();
    const headers = { 'file-name': found.name, 'file-path': key.path, 'file-size': String(key.size), 'file-modified-at': at, 'file-folder': folder.describe };
    return { source: 'file', name: this.entry.name, service: this.entry.service, headers, at, cid: this.deps.kernel.newCid() };
  }

  private async tooLarge(folder: FileFolder, key: FileKey, found: Found, why: string): Promise<boolean> {
    const event = this.eventOf(key, found, folder);
    const movedTo = `${this.entry.error_folder.replace(/\/+$/, '')}/${key.path}`;
    // Stored without content, so a replay would run the service on nothing: the plugin refuses replays of events with this header (plugin.ts).
    event.headers![NOT_READ_HEADER] = `the file was not read (over max_file_bytes, ${this.entry.max_file_bytes}): to run it, raise max_file_bytes and move ${movedTo} back into the folder`;
    await this.deadLetter(event, { kind: 'PAYLOAD_TOO_LARGE', message: `${why} (max_file_bytes); not read, moved to ${movedTo}`, attempts: 0 });
    await this.deps.claims.setState(key, 'failed', why);
    this.meter('too_large');
    await this.moveAway(folder, { ...key, state: 'failed' });
    return true;
  }

  private async deadLetter(event: SourceEvent, reason: { kind: string; message: string; attempts: number }): Promise<void> {
    const durable = this.deps.kernel.lookup('events.durable');
    if (!durable) throw new SvcError('SERVICE_UNAVAILABLE', 'the Use queue (which keeps dead letters) is off');
    const { id } = await durable.deadLetter(this.queue, event, reason);
    this.deps.log.warn({ cid: event.cid, channel: this.entry.name, file: event.headers?.['file-path'], dead_letter: id, kind: reason.kind }, `file pickup: file dead-lettered: ${reason.message}`);
  }

  /** use_queue: the event (with the file's bytes, decoded) and the claim's new state commit together. */
  private async enqueue(folder: FileFolder, key: FileKey, event: SourceEvent, body: Buffer): Promise<boolean> {
    const { kernel, claims } = this.deps;
    try {
      const decoded = kernel.decodeMessage(this.entry.data_format, body, this.channel.formatSettings);
      if (decoded.payload !== undefined) event.payload = decoded.payload;
      if (decoded.textFields) event.textFields = true;
      if (decoded.raw) event.rawBody = body;
    } catch (err) {
      if (!(err instanceof MessageFormatError)) throw err;
      event.rawBody = body;
      await this.deadLetter(event, { kind: 'MessageFormatError', message: err.message, attempts: 0 });
      await claims.setState(key, 'failed', err.message);
      this.meter('dead_letter');
      await this.moveAway(folder, { ...key, state: 'failed' });
      return true;
    }
    const durable = kernel.lookup('events.durable');
    if (!durable) throw new SvcError('SERVICE_UNAVAILABLE', 'the Use queue is off');
    const stored = await kernel.store.transaction(
      async (tx) => {
        const s = await durable.enqueue(tx, this.queue, event);
        await claims.setState(key, 'queued', null, tx);
        await claims.queued(tx, key, s.id, s.cid);
        return s;
      },
      { durable: true },
    );
    stored.committed();
    this.meter('queued');
    return true;
  }

  /** Files whose claims say done or failed but which are still here: moved now, never run again. */
  async movePending(folder: FileFolder): Promise<number> {
    let moved = 0;
    for (const row of await this.deps.claims.pendingMoves(this.entry.name)) {
      if (this.stop.aborted) break;
      if (await this.moveAway(folder, row)) moved++;
    }
    return moved;
  }

  /** Moves the file to done_folder (or removes it), or to error_folder; then forgets its claim. False when the move failed (retried at the next poll). */
  private async moveAway(folder: FileFolder, row: FileKey & Pick<ClaimRow, 'state'>): Promise<boolean> {
    const done = row.state === 'done';
    const target = done ? this.entry.done_folder : this.entry.error_folder;
    const to = `${target.replace(/\/+$/, '')}/${row.path}`;
    try {
      if (done && this.entry.delete) await folder.remove(row.path).catch(ignoreGone);
      else {
        await folder.mkdir(to.slice(0, to.lastIndexOf('/')));
        await folder.rename(row.path, to).catch(ignoreGone);
      }
      if (this.entry.stable.marker !== undefined) await folder.remove(row.path + this.entry.stable.marker).catch(ignoreGone);
      await this.deps.claims.forget(row);
      return true;
    } catch (err) {
      this.deps.log.warn({ channel: this.entry.name, file: printable(row.path), to: done && this.entry.delete ? '(delete)' : to, err: (err as Error).message }, 'file pickup: the file could not be moved away; it stays claimed and is moved at the next poll, never run again');
      return false;
    }
  }
}

/** A file already gone from where it was is where it should be: moved by an earlier try. */
function ignoreGone(err: unknown): void {
  if (err instanceof SvcError && err.code === 'NOT_FOUND') return;
  throw err;
}
