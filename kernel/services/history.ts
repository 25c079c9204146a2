import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { sqlTypes, type DataStore, type Dialect, type Migration } from '../../sdk/plugin/store.ts';
import type { DeployedVersion, DeployOrigin } from './registry.ts';

/**
 * Deploy history (docs/services.md, "Deploy history"): every version of a service that deployed,
 * by its content hash, with when, from where (its file, an upload, a rollback, the copy kept from
 * before a restart), who (for uploads and rollbacks through the management plane) and on which
 * node. In the store, so a cluster on PostgreSQL shares one history. A version that deploys again
 * while it is the service's latest (a restart, another node deploying a shared upload) adds no
 * row; one that comes back later (a rollback, a file saved back) does, as the newest version.
 * Versions are numbered per service from 1, oldest first; the number of a version never changes.
 */
const OWNER = 'service-history';
/** Versions kept per service: the oldest beyond it are removed as new ones deploy. */
export const VERSIONS_KEPT = 200;

function migrations(dialect: Dialect): Migration[] {
  const t = sqlTypes(dialect);
  return [
    {
      version: 1,
      up: `CREATE TABLE svc_service_version (
        id ${t.autoId},
        name TEXT NOT NULL,
        version ${t.int} NOT NULL,
        hash TEXT NOT NULL,
        file TEXT NOT NULL,
        source TEXT NOT NULL,
        origin TEXT NOT NULL,
        actor TEXT,
        node TEXT NOT NULL,
        deployed_at ${t.int} NOT NULL,
        UNIQUE (name, version)
      )`,
    },
  ];
}

export interface VersionInfo {
  version: number;
  hash: string;
  file: string;
  origin: DeployOrigin;
  actor: string | null;
  node: string;
  deployed_at: string;
  bytes: number;
}

interface Row {
  version: number;
  hash: string;
  file: string;
  source: string;
  origin: DeployOrigin;
  actor: string | null;
  node: string;
  deployed_at: number;
}

const hashOf = (source: string) => createHash('sha256').update(source).digest('hex');

export class DeployHistory {
  /** Writes in deploy order, one at a time: a version's number is the latest plus one. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly store: DataStore,
    private readonly node: string,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  static async open(store: DataStore, node: string, log: Logger, now: () => number = Date.now): Promise<DeployHistory> {
    await store.migrate(OWNER, migrations(store.dialect));
    return new DeployHistory(store, node, log, now);
  }

  /** Records a deployed version (the registry's 'deployed' event); a store that fails costs a warning, never the deploy. */
  record(version: DeployedVersion): Promise<void> {
    const run = this.queue.then(() => this.write(version));
    this.queue = run.catch((err: unknown) => this.log.warn({ err, service: version.name }, 'deploy history: the version could not be recorded'));
    return this.queue as Promise<void>;
  }

  /** Waits for the versions recorded so far (tests, and a rollback that reads its own deploy). */
  settled(): Promise<void> {
    return this.queue.then(() => undefined);
  }

  private async write({ name, file, source, origin, actor }: DeployedVersion): Promise<void> {
    const hash = hashOf(source);
    const latest = await this.store.one<{ version: number; hash: string }>('SELECT version, hash FROM svc_service_version WHERE name = ? ORDER BY version DESC LIMIT 1', [name]);
    if (latest?.hash === hash) return;
    const version = (latest?.version ?? 0) + 1;
    try {
      await this.store.run('INSERT INTO svc_service_version (name, version, hash, file, source, origin, actor, node, deployed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', [
        name,
        version,
        hash,
        file,
        source,
        origin,
        actor ?? null,
        this.node,
        this.now(),
      ]);
    } catch (err) {
      // Another node recorded this deploy (a shared upload) in the same moment: its row stands.
      const again = await this.store.one<{ hash: string }>('SELECT hash FROM svc_service_version WHERE name = ? AND version = ?', [name, version]);
      if (again?.hash === hash) return;
      throw err;
    }
    if (version > VERSIONS_KEPT) await this.store.run('DELETE FROM svc_service_version WHERE name = ? AND version <= ?', [name, version - VERSIONS_KEPT]);
  }

  /** A service's versions, newest first. */
  async list(name: string): Promise<VersionInfo[]> {
    const rows = await this.store.all<Row>('SELECT version, hash, file, source, origin, actor, node, deployed_at FROM svc_service_version WHERE name = ? ORDER BY version DESC', [name]);
    return rows.map(({ source, deployed_at, ...rest }) => ({ ...rest, deployed_at: new Date(deployed_at).toISOString(), bytes: Buffer.byteLength(source) }));
  }

  /** One version with its source, or undefined. */
  async get(name: string, version: number): Promise<(VersionInfo & { source: string }) | undefined> {
    const row = await this.store.one<Row>('SELECT version, hash, file, source, origin, actor, node, deployed_at FROM svc_service_version WHERE name = ? AND version = ?', [name, version]);
    return row && { ...row, deployed_at: new Date(row.deployed_at).toISOString(), bytes: Buffer.byteLength(row.source) };
  }
}
