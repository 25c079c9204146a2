import { sqlTypes, type DataStore, type Dialect, type Migration, type Queryable, type StoredSecrets } from '../../../sdk/plugin/index.ts';

/**
 * Persisted secrets of security definitions, one row per definition, hashed only.
 * `source` says where the current secret came from; `config_hash` is the hash of the
 * config file's value as last applied, so a later edit of that value is recognised
 * (see docs/decisions/security.md, "Secret precedence"). `builtin` marks definitions a
 * plugin registers in code (pub/sub's test definition): they are not in the config file,
 * so leaving it is no reason to forget them.
 */
export type SecretSource = 'generated' | 'config' | 'cli';

export interface SecretRow {
  definition: string;
  type: string;
  secret_hash: string;
  source: SecretSource;
  config_hash: string | null;
  builtin: boolean;
  updated_at: number;
}

export const SECRET_STORE_OWNER = 'security';

function migrations(dialect: Dialect): Migration[] {
  return [
    {
      version: 1,
      up: `CREATE TABLE security_secret (
        definition TEXT NOT NULL PRIMARY KEY,
        type TEXT NOT NULL,
        secret_hash TEXT NOT NULL,
        source TEXT NOT NULL,
        config_hash TEXT,
        updated_at ${sqlTypes(dialect).int} NOT NULL
      )`,
    },
    { version: 2, up: 'ALTER TABLE security_secret ADD COLUMN builtin INTEGER NOT NULL DEFAULT 0' },
  ];
}

const migrated = new WeakMap<DataStore, Promise<void>>();

/** Creates the table once per store, however many security plugins ask. */
export function migrateSecretStore(store: DataStore): Promise<void> {
  let done = migrated.get(store);
  if (done === undefined) {
    done = store.migrate(SECRET_STORE_OWNER, migrations(store.dialect));
    migrated.set(store, done);
    done.catch(() => migrated.delete(store));
  }
  return done;
}

const COLUMNS = 'definition, type, secret_hash, source, config_hash, builtin, updated_at';
type StoredRow = Omit<SecretRow, 'builtin' | 'updated_at'> & { builtin: number | boolean; updated_at: number | bigint };

function fromStored(row: StoredRow): SecretRow {
  return { ...row, builtin: Boolean(row.builtin), updated_at: Number(row.updated_at) };
}

export async function secretRows(db: Queryable, type: string): Promise<Map<string, SecretRow>> {
  const rows = await db.all<StoredRow>(`SELECT ${COLUMNS} FROM security_secret WHERE type = ?`, [type]);
  return new Map(rows.map((r) => [r.definition, fromStored(r)]));
}

/**
 * The definitions of a type whose secret someone set (`svc secdef`, the config file, the admin
 * API): the admin API shows their `field` as set (contributes.storedSecrets). A generated one is a
 * random secret nobody knows, which the operator has yet to set: not shown as set.
 */
export function storedSecretsOf(type: string, field: string): StoredSecrets {
  return {
    section: 'security',
    field,
    entries: async (store) => {
      await migrateSecretStore(store);
      return [...(await secretRows(store, type)).values()].filter((row) => row.source !== 'generated').map((row) => row.definition);
    },
  };
}

export async function secretRow(db: Queryable, definition: string): Promise<SecretRow | undefined> {
  const row = await db.one<StoredRow>(`SELECT ${COLUMNS} FROM security_secret WHERE definition = ?`, [definition]);
  return row === undefined ? undefined : fromStored(row);
}

export async function writeSecretRow(db: Queryable, row: SecretRow): Promise<void> {
  await db.run(
    `INSERT INTO security_secret (${COLUMNS})
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (definition) DO UPDATE SET
       type = excluded.type, secret_hash = excluded.secret_hash, source = excluded.source,
       config_hash = excluded.config_hash, builtin = excluded.builtin, updated_at = excluded.updated_at`,
    [row.definition, row.type, row.secret_hash, row.source, row.config_hash, row.builtin ? 1 : 0, row.updated_at],
  );
}

/**
 * Forgets secrets of definitions of this type that left the config (a name reused later
 * starts afresh). Built-in definitions stay: they exist in every environment.
 */
export async function deleteSecretRowsExcept(db: Queryable, type: string, keep: ReadonlySet<string>): Promise<string[]> {
  const rows = await db.all<{ definition: string }>('SELECT definition FROM security_secret WHERE type = ? AND builtin = 0', [type]);
  const gone = rows.map((r) => r.definition).filter((d) => !keep.has(d));
  for (const definition of gone) await db.run('DELETE FROM security_secret WHERE definition = ? AND type = ?', [definition, type]);
  return gone;
}
