import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { sqlTypes, type Clock, type DataStore, type Dialect, type Migration } from '../../../sdk/plugin/index.ts';
import type { NodeInfo } from '../../capabilities.ts';

interface NodeIdentity {
  readonly id: string;
  readonly name: string;
  readonly startedAt: number;
}

const OWNER = 'nodes';
function migrations(dialect: Dialect): Migration[] {
  const t = sqlTypes(dialect);
  return [
    {
      version: 1,
      up: `CREATE TABLE svc_node (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        version TEXT NOT NULL,
        runtime TEXT NOT NULL,
        started_at ${t.int} NOT NULL,
        heard_at ${t.int} NOT NULL,
        stopped_at ${t.int}
      )`,
    },
  ];
}

interface NodeRow {
  id: string;
  name: string;
  host: string;
  pid: number;
  version: string;
  runtime: string;
  started_at: number;
  heard_at: number;
  stopped_at: number | null;
}

export interface RegistryTiming {
  heartbeatMs: number;
  downAfterMs: number;
  forgetAfterMs: number;
}

/**
 * This node's row in the shared store, kept fresh by a heartbeat, and the list of every node
 * that wrote one: on one SQLite file that is this node (and earlier runs); on PostgreSQL, the
 * cluster. A node that stops says so; one that dies is listed as down once its heartbeat is late.
 */
export class NodeRegistry {
  readonly self: NodeIdentity;
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private lastError: string | undefined;

  constructor(
    private readonly store: DataStore,
    private readonly clock: Clock,
    private readonly timing: RegistryTiming,
    name: string,
    private readonly version: string,
    private readonly onError: (message: string | undefined) => void,
    /** This node's row was gone (others forgot it) and was written again. */
    private readonly onRejoined: () => void = () => undefined,
  ) {
    this.self = { id: randomBytes(6).toString('hex'), name, startedAt: clock.now() };
  }

  async start(): Promise<void> {
    await this.store.migrate(OWNER, migrations(this.store.dialect));
    const now = this.clock.now();
    await this.insertSelf(now);
    await this.store.run('DELETE FROM svc_node WHERE heard_at < ?', [now - this.timing.forgetAfterMs]);
    this.timer = setInterval(() => void this.beat(), this.timing.heartbeatMs);
    this.timer.unref();
  }

  private insertSelf(now: number): Promise<unknown> {
    return this.store.run('INSERT INTO svc_node (id, name, host, pid, version, runtime, started_at, heard_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [this.self.id, this.self.name, hostname(), process.pid, this.version, process.version, this.self.startedAt, now]);
  }

  /**
   * One heartbeat at a time; a failing store is reported once per change, and the next beat tries
   * again. A node silent past forget_after_ms (a suspended machine, a long store outage) finds its
   * row deleted by a node that started meanwhile: it writes it again, or it would stay invisible,
   * and the others would take over its queued events at every look while it runs them.
   */
  beat(): Promise<void> {
    this.beating ??= (async () => {
      const now = this.clock.now();
      const { changes } = await this.store.run('UPDATE svc_node SET heard_at = ? WHERE id = ?', [now, this.self.id]);
      if (changes === 0) {
        await this.insertSelf(now);
        this.onRejoined();
      }
    })()
      .then(
        () => this.report(undefined),
        (err: unknown) => this.report(err instanceof Error ? err.message : String(err)),
      )
      .finally(() => (this.beating = undefined));
    return this.beating;
  }

  private report(error: string | undefined): void {
    if (error !== this.lastError) this.onError(error);
    this.lastError = error;
  }

  async list(): Promise<NodeInfo[]> {
    const now = this.clock.now();
    const rows = await this.store.all<NodeRow>('SELECT id, name, host, pid, version, runtime, started_at, heard_at, stopped_at FROM svc_node WHERE heard_at >= ? ORDER BY started_at DESC, id', [now - this.timing.forgetAfterMs]);
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      host: r.host,
      pid: Number(r.pid),
      version: r.version,
      runtime: r.runtime,
      started_at: new Date(Number(r.started_at)).toISOString(),
      heard_at: new Date(Number(r.heard_at)).toISOString(),
      state: r.stopped_at !== null ? 'stopped' : now - Number(r.heard_at) > this.timing.downAfterMs ? 'down' : 'up',
      self: r.id === this.self.id,
    }));
  }

  /** Ids of the nodes up now (heartbeat on time, not stopped), this one included. */
  async liveIds(): Promise<ReadonlySet<string>> {
    const rows = await this.store.all<{ id: string }>('SELECT id FROM svc_node WHERE stopped_at IS NULL AND heard_at >= ?', [this.clock.now() - this.timing.downAfterMs]);
    const ids = new Set(rows.map((r) => r.id));
    ids.add(this.self.id);
    return ids;
  }

  /** Says this node stopped (a clean shutdown), so others do not wait for it to turn down. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.beating;
    await this.store.run('UPDATE svc_node SET stopped_at = ?, heard_at = ? WHERE id = ?', [this.clock.now(), this.clock.now(), this.self.id]).catch(() => undefined);
  }
}

/** The default node name: $SVC_NODE_NAME, else `<hostname>:<port>` (the hostname alone when the port is picked at listen). */
export function defaultNodeName(env: NodeJS.ProcessEnv, port: number): string {
  return env.SVC_NODE_NAME || (port ? `${hostname()}:${port}` : hostname());
}
