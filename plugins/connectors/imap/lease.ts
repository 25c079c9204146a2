import { randomBytes } from 'node:crypto';
import type { KernelApi } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import type { ImapTables, LeaseRow } from './store.ts';

/** This node as the lease knows it, and which nodes are up (undefined: unknown, expiry alone decides). */
export interface LeaseIdentity {
  id: string;
  name: string;
  liveNodes: (() => Promise<ReadonlySet<string>>) | undefined;
}

/**
 * Which node this is. One SQLite file serves one node: any other holder in it is an earlier run
 * of this one, taken over at once. On a shared store the nodes plugin says who is up; without it
 * a lease is taken over only once it expires.
 */
export function leaseIdentity(kernel: KernelApi): LeaseIdentity {
  const cluster = kernel.lookup('cluster.node');
  const id = cluster?.id ?? randomBytes(6).toString('hex');
  const name = cluster?.name ?? id;
  if (kernel.store.dialect === 'sqlite') return { id, name, liveNodes: async () => new Set([id]) };
  return { id, name, liveNodes: cluster ? () => cluster.liveNodes() : undefined };
}

/**
 * One node at a time works a channel: a row per channel in the store names the holder and an
 * expiry, renewed every third of `ttlMs` while it works. Another node takes it when it expired
 * or its holder is no longer among the live nodes (stopped, or its heartbeat late). The holder
 * counts the lease as its own only until the time its last successful claim started plus
 * `ttlMs`: a node that cannot reach the store stops working before anyone may take over.
 */
export class ChannelLease {
  /** The node holding the channel, as last read (for /ready on a standby node). */
  holderName: string | undefined;
  private validUntil = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly channel: string,
    private readonly tables: ImapTables,
    private readonly clock: { now(): number },
    private readonly self: LeaseIdentity,
    readonly ttlMs: number,
  ) {}

  /** Whether this node may start the next message. */
  held(): boolean {
    return this.clock.now() < this.validUntil;
  }

  /** Takes the lease, or renews it when this node has it. False: another node works the channel. Throws when the store does not answer. */
  async claim(): Promise<boolean> {
    const started = this.clock.now();
    const row = await this.tables.lease(this.channel);
    if (row && row.holder !== this.self.id && !(await this.abandoned(row, started))) {
      this.holderName = row.holder_name;
      this.validUntil = 0;
      return false;
    }
    const next: LeaseRow = { holder: this.self.id, holder_name: this.self.name, expires_at: started + this.ttlMs };
    if (await this.tables.claimLease(this.channel, row, next)) {
      this.holderName = this.self.name;
      this.validUntil = started + this.ttlMs;
      return true;
    }
    this.validUntil = 0;
    this.holderName = (await this.tables.lease(this.channel))?.holder_name;
    return false;
  }

  /** Renews the lease every third of its time until `release` or its loss: `onLost` when another node has it or it ran out. */
  keep(onLost: () => void): void {
    clearInterval(this.timer);
    const lost = () => {
      clearInterval(this.timer);
      this.timer = undefined;
      onLost();
    };
    this.timer = setInterval(() => {
      this.claim().then(
        (ok) => {
          if (!ok) lost();
        },
        // The store is away: the lease stays ours only until it runs out.
        () => {
          if (!this.held()) lost();
        },
      );
    }, this.lookEveryMs);
  }

  /** Stops renewing and gives the channel up, so a standby node takes it at its next look. */
  async release(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.validUntil = 0;
    await this.tables.releaseLease(this.channel, this.self.id).catch(() => undefined);
  }

  /** How often a standby node looks whether the channel is free. */
  get lookEveryMs(): number {
    return Math.max(50, Math.floor(this.ttlMs / 3));
  }

  private async abandoned(row: LeaseRow, now: number): Promise<boolean> {
    if (row.expires_at <= now) return true;
    if (!this.self.liveNodes) return false;
    return !(await this.self.liveNodes()).has(row.holder);
  }
}
