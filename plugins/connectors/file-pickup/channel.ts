import { ConnectionMeter, SvcError } from '../../../sdk/plugin/index.ts';
import type { FileFolder } from '../../capabilities.ts';
import { formatSettingsOf } from '../shared/fields.ts';
import { InboundPipeline } from '../shared/inbound.ts';
import type { FileKey } from './claims.ts';
import { Listing, type Found } from './listing.ts';
import { printable } from './local-folder.ts';
import { FileRun, type ChannelDeps } from './run.ts';
import type { ChannelFileEntry } from './schema.ts';

/** What one poll did (the `file.poll` control op answers it). */
export interface PollSummary {
  listed: number;
  taken: number;
  moved: number;
  error?: string;
}

/**
 * One channel_file: polls its folder on its schedule, takes the files that are ready (each once
 * across nodes and restarts, by its claim) and runs the service on each, at most `concurrency` at
 * once, then moves it away. A poll never overlaps the previous one.
 */
export class FileChannel {
  readonly meter: ConnectionMeter;
  state: 'up' | 'connecting' | 'down' = 'connecting';
  reason: string | undefined;
  private readonly listing: Listing;
  private readonly run: FileRun;
  private readonly stop = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<PollSummary> | undefined;
  private stopped = false;

  constructor(
    readonly entry: ChannelFileEntry,
    private readonly deps: ChannelDeps,
  ) {
    this.meter = new ConnectionMeter(deps.kernel.clock);
    this.listing = new Listing(entry, deps.log);
    const channel = { source: 'file', name: entry.name, service: entry.service, data_format: entry.data_format, formatSettings: formatSettingsOf(entry), delivery: entry.delivery, deadLetter: 'svc' as const };
    const pipeline = new InboundPipeline(channel, { kernel: deps.kernel, meter: this.meter, log: deps.log, stop: this.stop.signal });
    this.run = new FileRun(entry, channel, pipeline, deps, this.meter, this.stop.signal);
    if ('error' in deps.timing) {
      this.state = 'down';
      this.reason = `poll: ${deps.timing.error}`;
    }
  }

  begin(): void {
    this.run.declare();
    if ('error' in this.deps.timing) {
      this.deps.log.error({ channel: this.entry.name }, `file pickup: the channel does not poll: ${this.reason}`);
      return;
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped || 'error' in this.deps.timing) return;
    const now = this.deps.kernel.clock.now();
    const next = this.deps.timing.next(now);
    if (next === undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll().finally(() => this.schedule());
    }, Math.max(0, next - now));
    this.timer.unref();
  }

  /** Polls now, or joins the poll under way. */
  poll(): Promise<PollSummary> {
    if (this.stopped) return Promise.resolve({ listed: 0, taken: 0, moved: 0, error: 'stopped' });
    this.polling ??= this.pollOnce().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async pollOnce(): Promise<PollSummary> {
    const started = this.meter.start();
    const summary: PollSummary = { listed: 0, taken: 0, moved: 0 };
    let folder: FileFolder | undefined;
    try {
      folder = await this.deps.open();
      summary.moved = await this.run.movePending(folder);
      const ready = await this.listing.ready(folder);
      summary.listed = ready.length;
      this.state = 'up';
      this.reason = undefined;
      this.meter.done('poll', 'ok', started);
      summary.taken = await this.takeAll(folder, ready.slice(0, this.entry.max_files_per_poll));
    } catch (err) {
      const why = err instanceof SvcError ? err.details : (err as Error).message;
      this.state = 'down';
      this.reason = why.slice(0, 300);
      summary.error = this.reason;
      this.meter.done('poll', 'error', started);
      this.deps.log.warn({ channel: this.entry.name, reason: this.reason }, 'file pickup: the poll failed; the next poll tries again');
    } finally {
      // Not awaited: a session that broke may never say it closed, and the poll is over either way.
      if (folder) void folder.release().catch(() => {});
    }
    return summary;
  }

  /** Runs the ready files, `concurrency` at once; resolves with how many this node took. */
  private async takeAll(folder: FileFolder, files: Found[]): Promise<number> {
    let next = 0;
    let taken = 0;
    const worker = async () => {
      while (next < files.length && !this.stop.signal.aborted) {
        const f = files[next++]!;
        const key: FileKey = { channel: this.entry.name, path: f.path, size: f.size, mtime: f.mtimeMs };
        try {
          if (await this.run.take(folder, key, f)) taken++;
        } catch (err) {
          // The file stays where it is, claimed by no one or by this node: the next poll (or a restart) takes it up.
          this.meter.done('pickup', 'error');
          this.deps.log.warn({ channel: this.entry.name, file: printable(f.path), err: (err as Error).message }, 'file pickup: the file could not be handled; left for the next poll');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.entry.concurrency, files.length) }, worker));
    return taken;
  }

  /** A queued file's run settled: move it now rather than at the next poll. */
  kickMoves(): void {
    if (this.stopped || this.polling) return;
    void (async () => {
      const folder = await this.deps.open();
      try {
        await this.run.movePending(folder);
      } finally {
        void folder.release().catch(() => {});
      }
    })().catch((err: unknown) => this.deps.log.warn({ channel: this.entry.name, err: (err as Error).message }, 'file pickup: moving settled files failed; the next poll moves them'));
  }

  /** Shutdown: no new polls; runs under way end (a file whose run was cut is taken again at the next start). */
  async drain(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stop.abort();
    await this.polling?.catch(() => {});
    this.state = 'down';
    this.reason = 'stopped';
  }
}
