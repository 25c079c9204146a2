import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { MAX_NOTIFY_PAYLOAD, type DataStore } from '../../sdk/plugin/store.ts';
import { monotonicNow } from '../platform/clock.ts';
import { Ticker } from '../platform/ticker.ts';
import type { NodeUsage, TenantLedger } from './ledger.ts';

/**
 * Tenants' windowed quotas across a cluster (docs/tenants.md, "Across nodes"): every 100 ms in
 * which they changed, and every second regardless, each node sends through the store's change
 * notifications what each tenant used on it in the quotas' windows (CPU ms and outgoing calls in
 * the last minute, publishes in the last second); each node checks a quota against its own use,
 * the others' last figures and its share of the room left (kernel/tenants/ledger.ts). Sums, not
 * events, travel: a lost notification costs staleness, never a count twice; a node that stops
 * sending stops counting after REMOTE_TTL_MS.
 *
 * Nothing is sent while no tenant has a windowed quota. On the SQLite store (one node) the
 * notifications reach only other stores of the same file in this process.
 */

export const USAGE_TOPIC = 'tenants.usage';
export const SHARE_EVERY_MS = 100;
/** A node sends at least this often while tenants have windowed quotas, so the others count it among the nodes. */
export const KEEPALIVE_MS = 1_000;

interface Message {
  /** The sending node (a random id per start). */
  n: string;
  u: NodeUsage;
}

export class UsageSharing {
  readonly node = randomBytes(6).toString('hex');
  private readonly timer = new Ticker(() => this.tick());
  private unlisten: (() => void) | undefined;
  private sending = false;
  private failing = false;
  private lastSent = '';
  private lastSentAt = -Infinity;

  constructor(
    private readonly store: DataStore,
    private readonly ledger: TenantLedger,
    private readonly log: Logger,
    private readonly everyMs = SHARE_EVERY_MS,
  ) {}

  start(): void {
    this.unlisten = this.store.listen(USAGE_TOPIC, (payload) => this.receive(payload));
    this.timer.atMost(this.everyMs);
  }

  stop(): void {
    this.timer.stop();
    this.unlisten?.();
    this.unlisten = undefined;
  }

  /**
   * Every `everyMs` while tenants have windowed quotas; with none (a config reload may add
   * some) it only looks once a KEEPALIVE_MS, so a node without quotas does not wake ten times a second.
   */
  private tick(): number {
    void this.send();
    return this.ledger.hasWindowedQuotas() ? this.everyMs : Math.max(this.everyMs, KEEPALIVE_MS);
  }

  /** Sends this node's sums, in as many notifications as their size needs. */
  async send(): Promise<void> {
    if (this.sending || !this.ledger.hasWindowedQuotas()) return;
    // Monotonic: a wall clock set back must not silence the keepalive the other nodes count this node by.
    const now = monotonicNow();
    const usage = this.ledger.localUsage();
    const parts = split(this.node, usage);
    const text = parts.join('\n');
    if (text === this.lastSent && now - this.lastSentAt < KEEPALIVE_MS) return;
    this.sending = true;
    try {
      // The shares count from what the others are about to learn.
      this.ledger.markReported(usage);
      for (const part of parts) await this.store.notify(USAGE_TOPIC, part);
      this.lastSent = text;
      this.lastSentAt = now;
      if (this.failing) this.log.info('tenant usage reaches the other nodes again');
      this.failing = false;
    } catch (err) {
      // The store is down: each node then counts what it sees; said once, not every half second.
      if (!this.failing) this.log.warn({ err }, "tenant usage cannot be sent to the other nodes: each node's quotas count only its own use until the store answers");
      this.failing = true;
    } finally {
      this.sending = false;
    }
  }

  /** Another node's sums; anything malformed is dropped (notifications come from any store on the database). */
  private receive(payload: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(payload);
    } catch {
      return;
    }
    if (!isMessage(msg) || msg.n === this.node) return;
    this.ledger.setRemote(msg.n, msg.u, msg.more === true);
  }
}

/** The node's usage in notifications under MAX_NOTIFY_PAYLOAD; every part but the first adds to the first's. */
export function split(node: string, usage: NodeUsage): string[] {
  const parts: string[] = [];
  let current: NodeUsage = {};
  let size = 0;
  const flush = () => {
    parts.push(JSON.stringify({ n: node, u: current, ...(parts.length ? { more: true } : {}) }));
    current = {};
    size = 0;
  };
  for (const [tenant, sums] of Object.entries(usage)) {
    const entry = JSON.stringify({ [tenant]: sums }).length;
    if (size + entry > MAX_NOTIFY_PAYLOAD - 200 && size > 0) flush();
    current[tenant] = sums;
    size += entry;
  }
  flush();
  return parts;
}

function isMessage(v: unknown): v is Message & { more?: boolean } {
  if (typeof v !== 'object' || v === null) return false;
  const m = v as Record<string, unknown>;
  if (typeof m.n !== 'string' || m.n.length > 32 || typeof m.u !== 'object' || m.u === null) return false;
  for (const sums of Object.values(m.u as Record<string, unknown>)) {
    if (typeof sums !== 'object' || sums === null) return false;
    for (const n of Object.values(sums as Record<string, unknown>)) if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return false;
  }
  return true;
}
