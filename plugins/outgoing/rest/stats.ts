import type { OutgoingStats } from '../../capabilities.ts';

/** Calls by connection and final status since start: what the metrics plugin reads ('outgoing-rest.stats'). */
export class CallCounts {
  private readonly byConnection = new Map<string, Map<string, number>>();

  /** `connection` is a configured one: a name a service made up never becomes a label. */
  add(connection: string, status: string): void {
    let byStatus = this.byConnection.get(connection);
    if (!byStatus) this.byConnection.set(connection, (byStatus = new Map()));
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }

  stats(): OutgoingStats {
    const calls: OutgoingStats['calls'] = [];
    for (const [connection, byStatus] of this.byConnection) for (const [status, count] of byStatus) calls.push({ connection, status, count });
    return { calls };
  }
}
