import { sqlTypes, type DataStore, type Queryable } from '../../../sdk/plugin/index.ts';

/**
 * Which node took which file: one row per file version (channel, path, size, mtime), inserted
 * with ON CONFLICT DO NOTHING so that of several nodes polling one folder exactly one wins it.
 * The row's state says how far the file got, so that a restart or another node finishes the job
 * without running the service again where it ran already:
 * - `running`: the service runs in place on `node` (a claim whose node died is taken over: the
 *   service may run again for that file: at least once for a run cut by a crash);
 * - `queued`: stored in the Use queue as event `event_id`/`cid` in the claim's transaction; the
 *   queue runs it (and takes it over from a dead node itself): the file stays until it settled;
 * - `done` / `failed`: the file only has to be moved (to done_folder / error_folder), never run again.
 * The row is deleted once the file is moved away; a row left behind by a crash between the two
 * names a file that is gone, and is harmless.
 */
export type ClaimState = 'running' | 'queued' | 'done' | 'failed';

export interface FileKey {
  channel: string;
  path: string;
  size: number;
  mtime: number;
}

export interface ClaimRow extends FileKey {
  state: ClaimState;
  node: string;
  event_id: number | null;
  cid: string | null;
  reason: string | null;
}

const KEY = 'channel = ? AND path = ? AND size = ? AND mtime = ?';
const keyOf = (k: FileKey) => [k.channel, k.path, k.size, k.mtime];

function rowOf(r: Record<string, unknown>): ClaimRow {
  return {
    channel: String(r.channel),
    path: String(r.path),
    size: Number(r.size),
    mtime: Number(r.mtime),
    state: r.state as ClaimState,
    node: String(r.node),
    event_id: r.event_id === null || r.event_id === undefined ? null : Number(r.event_id),
    cid: (r.cid as string | null) ?? null,
    reason: (r.reason as string | null) ?? null,
  };
}

export class ClaimTable {
  private constructor(readonly store: DataStore) {}

  static async open(store: DataStore): Promise<ClaimTable> {
    const t = sqlTypes(store.dialect);
    await store.migrate('file-pickup', [
      {
        version: 1,
        up: `
          CREATE TABLE file_pickup_claim (
            channel TEXT NOT NULL,
            path TEXT NOT NULL,
            size ${t.int} NOT NULL,
            mtime ${t.int} NOT NULL,
            state TEXT NOT NULL,
            node TEXT NOT NULL,
            event_id ${t.int},
            cid TEXT,
            reason TEXT,
            claimed_at ${t.int} NOT NULL,
            PRIMARY KEY (channel, path, size, mtime)
          );
          CREATE INDEX file_pickup_claim_event ON file_pickup_claim (event_id)
        `,
      },
    ]);
    return new ClaimTable(store);
  }

  /** Takes the file for this node: true when this node won it. */
  async claim(key: FileKey, node: string, state: ClaimState, now: number, tx: Queryable = this.store): Promise<boolean> {
    const r = await tx.run('INSERT INTO file_pickup_claim (channel, path, size, mtime, state, node, claimed_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (channel, path, size, mtime) DO NOTHING', [...keyOf(key), state, node, now]);
    return r.changes === 1;
  }

  async get(key: FileKey): Promise<ClaimRow | undefined> {
    const r = await this.store.one<Record<string, unknown>>(`SELECT * FROM file_pickup_claim WHERE ${KEY}`, keyOf(key));
    return r && rowOf(r);
  }

  /** Takes over a running claim from a node that died: true when this node won it (another may try at once). */
  async takeOver(key: FileKey, from: string, to: string, now: number): Promise<boolean> {
    const r = await this.store.run(`UPDATE file_pickup_claim SET node = ?, claimed_at = ? WHERE ${KEY} AND node = ? AND state = 'running'`, [to, now, ...keyOf(key), from]);
    return r.changes === 1;
  }

  async setState(key: FileKey, state: ClaimState, reason: string | null = null, tx: Queryable = this.store): Promise<void> {
    await tx.run(`UPDATE file_pickup_claim SET state = ?, reason = ? WHERE ${KEY}`, [state, reason, ...keyOf(key)]);
  }

  async queued(tx: Queryable, key: FileKey, eventId: number, cid: string): Promise<void> {
    await tx.run(`UPDATE file_pickup_claim SET event_id = ?, cid = ? WHERE ${KEY}`, [eventId, cid, ...keyOf(key)]);
  }

  /** The claim of a queued event, inside the transaction that settles its attempt (event ids are reused by SQLite: the CID tells them apart). */
  async ofEvent(tx: Queryable, eventId: number, cid: string): Promise<ClaimRow | undefined> {
    const r = await tx.one<Record<string, unknown>>("SELECT * FROM file_pickup_claim WHERE event_id = ? AND cid = ? AND state = 'queued'", [eventId, cid]);
    return r && rowOf(r);
  }

  /** A claim given up (the file could not be read; svc is stopping): the next poll takes the file again. */
  async release(key: FileKey, node: string): Promise<void> {
    await this.store.run(`DELETE FROM file_pickup_claim WHERE ${KEY} AND node = ? AND state = 'running'`, [...keyOf(key), node]);
  }

  /** The file moved away: its claim is not needed any more. */
  async forget(key: FileKey): Promise<void> {
    await this.store.run(`DELETE FROM file_pickup_claim WHERE ${KEY}`, keyOf(key));
  }

  /** Claims in done/failed state of a channel: files still to be moved (their move failed, or the node stopped first). */
  async pendingMoves(channel: string): Promise<ClaimRow[]> {
    const rows = await this.store.all<Record<string, unknown>>("SELECT * FROM file_pickup_claim WHERE channel = ? AND state IN ('done', 'failed')", [channel]);
    return rows.map(rowOf);
  }
}
