import { sqlTypes, type DataStore, type Dialect, type Migration, type Queryable } from '../../../sdk/plugin/index.ts';

const OWNER = 'admin';
function migrations(dialect: Dialect): Migration[] {
  const t = sqlTypes(dialect);
  return [
    {
      version: 1,
      up: `CREATE TABLE admin_user (
        username TEXT PRIMARY KEY,
        password_hash TEXT NOT NULL,
        updated_at ${t.int} NOT NULL
      );
      CREATE TABLE admin_key (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        digest TEXT NOT NULL,
        created_at ${t.int} NOT NULL
      );
      CREATE TABLE admin_override (
        section TEXT NOT NULL,
        name TEXT NOT NULL,
        action TEXT NOT NULL,
        entry TEXT,
        updated_at ${t.int} NOT NULL,
        updated_by TEXT NOT NULL,
        PRIMARY KEY (section, name)
      );
      CREATE TABLE admin_audit (
        id ${t.autoId},
        at ${t.int} NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        section TEXT,
        name TEXT,
        detail TEXT
      )`,
    },
    {
      // Roles and tenants (docs/tenants.md): accounts and keys made before are platform admins.
      version: 2,
      up: `ALTER TABLE admin_user ADD COLUMN role TEXT NOT NULL DEFAULT 'platform';
      ALTER TABLE admin_user ADD COLUMN tenant TEXT;
      ALTER TABLE admin_key ADD COLUMN role TEXT NOT NULL DEFAULT 'platform';
      ALTER TABLE admin_key ADD COLUMN tenant TEXT;
      ALTER TABLE admin_audit ADD COLUMN tenant TEXT;
      CREATE INDEX admin_audit_tenant ON admin_audit (tenant, id)`,
    },
  ];
}

export function migrateAdmin(store: DataStore): Promise<void> {
  return store.migrate(OWNER, migrations(store.dialect));
}

/**
 * One admin edit of a resource: `upsert` puts `entry` in place of the file's entry of that name
 * (or adds it); `delete` removes the file's entry. Stored entries hold no write-only values
 * (those are in the vault).
 */
export interface OverrideRecord {
  section: string;
  name: string;
  action: 'upsert' | 'delete';
  entry: Record<string, unknown> | undefined;
  updatedAt: number;
  updatedBy: string;
}

interface OverrideRow {
  section: string;
  name: string;
  action: string;
  entry: string | null;
  updated_at: number;
  updated_by: string;
}

export async function readOverrides(store: Queryable): Promise<OverrideRecord[]> {
  const rows = await store.all<OverrideRow>('SELECT section, name, action, entry, updated_at, updated_by FROM admin_override ORDER BY updated_at, section, name');
  return rows.map((r) => ({
    section: r.section,
    name: r.name,
    action: r.action === 'delete' ? 'delete' : 'upsert',
    entry: r.entry === null ? undefined : (JSON.parse(r.entry) as Record<string, unknown>),
    updatedAt: Number(r.updated_at),
    updatedBy: r.updated_by,
  }));
}

export async function writeOverride(tx: Queryable, record: OverrideRecord): Promise<void> {
  await tx.run(
    `INSERT INTO admin_override (section, name, action, entry, updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (section, name) DO UPDATE SET action = excluded.action, entry = excluded.entry, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
    [record.section, record.name, record.action, record.entry === undefined ? null : JSON.stringify(record.entry), record.updatedAt, record.updatedBy],
  );
}

export async function deleteOverride(tx: Queryable, section: string, name: string): Promise<void> {
  await tx.run('DELETE FROM admin_override WHERE section = ? AND name = ?', [section, name]);
}

export interface AuditRow {
  id: number;
  at: string;
  /** Who: an account (`admin`, `acme/dev`), an API key (`key:NAME`) or `cli`. */
  actor: string;
  /** The tenant the row concerns (its resource's, account's or caller's); null: the platform. */
  tenant: string | null;
  action: string;
  section: string | null;
  name: string | null;
  detail: unknown;
}

export interface AuditEntry {
  at: number;
  actor: string;
  action: string;
  tenant?: string | undefined;
  section?: string | undefined;
  name?: string | undefined;
  detail?: unknown;
}

export async function writeAudit(tx: Queryable, row: AuditEntry): Promise<void> {
  await tx.run('INSERT INTO admin_audit (at, actor, tenant, action, section, name, detail) VALUES (?, ?, ?, ?, ?, ?, ?)', [
    row.at,
    row.actor,
    row.tenant ?? null,
    row.action,
    row.section ?? null,
    row.name ?? null,
    row.detail === undefined ? null : JSON.stringify(row.detail),
  ]);
}

/** Newest first; `tenant` given: that tenant's rows only. */
export async function readAudit(store: Queryable, query: { limit: number; before?: number | undefined; tenant?: string | undefined }): Promise<AuditRow[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (query.tenant !== undefined) (where.push('tenant = ?'), params.push(query.tenant));
  if (query.before !== undefined) (where.push('id < ?'), params.push(query.before));
  params.push(query.limit);
  const rows = await store.all<{ id: number; at: number; actor: string; tenant: string | null; action: string; section: string | null; name: string | null; detail: string | null }>(
    `SELECT id, at, actor, tenant, action, section, name, detail FROM admin_audit ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`,
    params,
  );
  return rows.map((r) => ({ ...r, id: Number(r.id), at: new Date(Number(r.at)).toISOString(), detail: r.detail === null ? null : (JSON.parse(r.detail) as unknown) }));
}
