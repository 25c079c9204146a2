import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { sqlTypes, type DataStore, type Dialect, type Migration } from '../../sdk/plugin/store.ts';
import { tenantOf } from '../../sdk/plugin/tenants.ts';
import { serviceName, type ServiceRegistry } from './registry.ts';

const qualifiedName = (file: string, tenant: string | undefined) => (tenant === undefined ? serviceName(file) : `${tenant}/${serviceName(file)}`);

const OWNER = 'services';
/** Notification of an uploaded or deleted service (payload: its name). */
const CHANGED = 'services.changed';

function migrations(dialect: Dialect): Migration[] {
  return [
    {
      version: 1,
      // source NULL: deleted. Kept as a row, so a node that was away removes its copy too.
      up: `CREATE TABLE svc_service (
        name TEXT PRIMARY KEY,
        file TEXT NOT NULL,
        source TEXT,
        updated_at ${sqlTypes(dialect).int} NOT NULL
      )`,
    },
  ];
}

interface Row {
  name: string;
  file: string;
  source: string | null;
}

/**
 * Services uploaded through the management plane, shared by every node on a PostgreSQL store: the
 * node that took the upload stores the source once it compiled there, and every node writes it
 * into its own services_dir and deploys it from there, so the registry's rule holds everywhere
 * (a version serves only once it compiled; a failing one leaves the last good version). A node
 * starting later writes the stored services before it deploys its directory. Files put into
 * services_dir by hand stay the node's own (docs/cluster.md: or share the directory itself).
 */
export class SharedServices {
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly store: DataStore,
    private readonly registry: ServiceRegistry,
    private readonly log: Logger,
  ) {}

  /** Undefined on SQLite: one node, nothing to share. Brings the stored services into services_dir before the registry deploys it. */
  static async open(store: DataStore, registry: ServiceRegistry, log: Logger): Promise<SharedServices | undefined> {
    if (store.dialect === 'sqlite') return undefined;
    await store.migrate(OWNER, migrations(store.dialect));
    const shared = new SharedServices(store, registry, log);
    for (const row of await shared.rows()) shared.write(row);
    registry.beforeTenantStart = (tenant) => shared.writeTenant(tenant);
    store.listen(
      CHANGED,
      (name) => shared.serial(() => shared.pull(name)),
      () => shared.serial(() => shared.pullAll()),
    );
    return shared;
  }

  /** An upload that compiled here: every node takes it. A tenant's is stored under its qualified name. */
  async uploaded(file: string, source: string, tenant?: string): Promise<void> {
    await this.save({ name: qualifiedName(file, tenant), file, source });
  }

  async deleted(file: string, tenant?: string): Promise<void> {
    await this.save({ name: qualifiedName(file, tenant), file, source: null });
  }

  /** A tenant just declared on this node: its stored services go into its directory before it deploys. */
  writeTenant(tenant: string): Promise<void> {
    return this.serial(async () => {
      for (const row of await this.rows()) if (tenantOf(row.name) === tenant) this.write(row);
    });
  }

  private async save(row: Row): Promise<void> {
    await this.store.run(
      `INSERT INTO svc_service (name, file, source, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET file = excluded.file, source = excluded.source, updated_at = excluded.updated_at`,
      [row.name, row.file, row.source, Date.now()],
    );
    await this.store.notify(CHANGED, row.name);
  }

  private rows(name?: string): Promise<Row[]> {
    return name === undefined
      ? this.store.all<Row>('SELECT name, file, source FROM svc_service ORDER BY name')
      : this.store.all<Row>('SELECT name, file, source FROM svc_service WHERE name = ?', [name]);
  }

  private async pull(name: string): Promise<void> {
    for (const row of await this.rows(name)) if (this.write(row)) await this.registryOf(row)?.syncNow(row.file);
  }

  private async pullAll(): Promise<void> {
    for (const row of await this.rows()) if (this.write(row)) await this.registryOf(row)?.syncNow(row.file);
  }

  /** The directory a row belongs in: the platform's, or its tenant's if the tenant is declared here. */
  private registryOf(row: Row): ServiceRegistry | undefined {
    return this.registry.forTenant(tenantOf(row.name));
  }

  /** Puts the row's version into its services directory (atomically) or removes it; whether the file changed. */
  private write(row: Row): boolean {
    const dir = this.registryOf(row)?.dir;
    // A tenant not declared (yet) on this node: written when it is (writeTenant).
    if (dir === undefined || !existsSync(dir)) return false;
    const path = join(dir, row.file);
    const current = existsSync(path) ? readFileSync(path, 'utf8') : null;
    if (current === row.source) return false;
    if (row.source === null) {
      rmSync(path, { force: true });
      this.log.info({ service: row.name, file: row.file }, 'service deleted on another node: removed here');
      return true;
    }
    const temp = join(dir, `.${row.file}.${randomBytes(6).toString('hex')}.shared`);
    try {
      writeFileSync(temp, row.source, { mode: 0o644 });
      renameSync(temp, path);
    } finally {
      rmSync(temp, { force: true });
    }
    this.log.info({ service: row.name, file: row.file }, 'service uploaded on another node: written here, deploying');
    return true;
  }

  private serial(fn: () => Promise<void>): Promise<void> {
    const guarded = () => (this.registry.closed ? Promise.resolve() : fn());
    const run = this.queue.then(guarded, guarded);
    this.queue = run.catch((err: unknown) => this.log.error({ err }, 'shared services: taking up a change failed'));
    return run;
  }
}
