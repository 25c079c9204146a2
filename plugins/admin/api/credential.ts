import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { hashSecret, isScryptHash, randomSecret, SvcError, verifySecret, type DataStore, type Queryable } from '../../../sdk/plugin/index.ts';
import { ADMIN_USER, type Role } from './roles.ts';
import { migrateAdmin } from './store.ts';

/**
 * Accounts (scrypt passwords, as security definitions' secrets) and the API keys of automation,
 * each with a role and, for a tenant role, its tenant. Keys are random 192-bit strings, so a
 * SHA-256 digest is enough to store them (no guessing to slow down) and a request costs no KDF;
 * passwords get scrypt.
 */

/** What an account or key may reach. */
export interface Grant {
  name: string;
  role: Role;
  tenant: string | undefined;
}

const KEY_PREFIX = 'svcadm_';

export async function passwordHash(store: Queryable, username = ADMIN_USER): Promise<string | undefined> {
  const row = await store.one<{ password_hash: string }>('SELECT password_hash FROM admin_user WHERE username = ?', [username]);
  return row?.password_hash;
}

/** A new password for an account; `admin` is created (a platform administrator) when missing, any other must exist. */
export async function storePasswordHash(store: DataStore, hash: string, now: number, username = ADMIN_USER): Promise<void> {
  if (!isScryptHash(hash)) throw new Error('not a scrypt hash of this server');
  await migrateAdmin(store);
  await store.transaction(
    async (tx) => {
      if (username !== ADMIN_USER) {
        const r = await tx.run('UPDATE admin_user SET password_hash = ?, updated_at = ? WHERE username = ?', [hash, now, username]);
        if (r.changes === 0) throw new SvcError('NOT_FOUND', `No account named '${username}'`);
        return;
      }
      await tx.run(
        `INSERT INTO admin_user (username, password_hash, updated_at, role) VALUES (?, ?, ?, 'platform')
         ON CONFLICT (username) DO UPDATE SET password_hash = excluded.password_hash, updated_at = excluded.updated_at`,
        [ADMIN_USER, hash, now],
      );
    },
    { durable: true },
  );
}

export async function addUser(store: DataStore, user: Grant & { hash: string }, now: number): Promise<void> {
  if (!isScryptHash(user.hash)) throw new Error('not a scrypt hash of this server');
  await migrateAdmin(store);
  await store.transaction(
    async (tx) => {
      if (await tx.one('SELECT 1 AS x FROM admin_user WHERE username = ?', [user.name])) throw new SvcError('CONFLICT', `An account named '${user.name}' exists already`);
      await tx.run('INSERT INTO admin_user (username, password_hash, updated_at, role, tenant) VALUES (?, ?, ?, ?, ?)', [user.name, user.hash, now, user.role, user.tenant ?? null]);
    },
    { durable: true },
  );
}

export async function deleteUser(store: DataStore, name: string): Promise<boolean> {
  if (name === ADMIN_USER) throw new SvcError('CONFLICT', `The account '${ADMIN_USER}' stays: it is the first platform administrator (change its password instead)`);
  const result = await store.transaction((tx) => tx.run('DELETE FROM admin_user WHERE username = ?', [name]), { durable: true });
  return result.changes > 0;
}

interface GrantRow {
  name: string;
  role: string;
  tenant: string | null;
}

const grantOf = (r: GrantRow): Grant => ({ name: r.name, role: r.role as Role, tenant: r.tenant ?? undefined });

/** Accounts, of one tenant when given. */
export async function listUsers(store: Queryable, tenant?: string): Promise<Array<Grant & { updatedAt: string }>> {
  const rows = await store.all<GrantRow & { updated_at: number }>(
    `SELECT username AS name, role, tenant, updated_at FROM admin_user ${tenant === undefined ? '' : 'WHERE tenant = ?'} ORDER BY username`,
    tenant === undefined ? [] : [tenant],
  );
  return rows.map((r) => ({ ...grantOf(r), updatedAt: new Date(Number(r.updated_at)).toISOString() }));
}

export async function findUser(store: Queryable, name: string): Promise<Grant | undefined> {
  const row = await store.one<GrantRow>('SELECT username AS name, role, tenant FROM admin_user WHERE username = ?', [name]);
  return row && grantOf(row);
}

/**
 * The first start creates the password: SVC_ADMIN_PASSWORD when set (containers), else a random
 * one. Returns the random password to print once; undefined when one existed or came from env.
 */
export async function ensurePassword(store: DataStore, env: NodeJS.ProcessEnv, now: number): Promise<string | undefined> {
  await migrateAdmin(store);
  if ((await passwordHash(store)) !== undefined) return undefined;
  const given = env.SVC_ADMIN_PASSWORD;
  const password = given !== undefined && given !== '' ? given : randomSecret();
  await storePasswordHash(store, await hashSecret(password), now);
  return given ? undefined : password;
}

/** The account when the password is its own; an unknown account costs the same KDF, so timing tells nothing. */
export async function checkLogin(store: Queryable, username: string, password: string, dummy: () => Promise<string>): Promise<Grant | undefined> {
  const row = await store.one<GrantRow & { password_hash: string }>('SELECT username AS name, role, tenant, password_hash FROM admin_user WHERE username = ?', [username]);
  const ok = await verifySecret(password, row?.password_hash ?? (await dummy()));
  return ok && row ? grantOf(row) : undefined;
}

export interface NewKey {
  id: string;
  /** The whole key as the client sends it; shown once. */
  key: string;
  digest: string;
}

export function newKey(): NewKey {
  const id = randomBytes(6).toString('hex');
  const secret = randomSecret();
  return { id, key: `${KEY_PREFIX}${id}_${secret}`, digest: digestOf(secret) };
}

function digestOf(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

export interface StoredKey extends Grant {
  id: string;
  digest: string;
}

export async function storeKey(store: DataStore, key: StoredKey, now: number): Promise<void> {
  await migrateAdmin(store);
  await store.transaction(
    async (tx) => {
      if (await tx.one('SELECT 1 AS x FROM admin_key WHERE name = ?', [key.name])) throw new SvcError('CONFLICT', `An API key named '${key.name}' exists already`);
      await tx.run('INSERT INTO admin_key (id, name, digest, created_at, role, tenant) VALUES (?, ?, ?, ?, ?, ?)', [key.id, key.name, key.digest, now, key.role, key.tenant ?? null]);
    },
    { durable: true },
  );
}

export async function deleteKey(store: DataStore, name: string): Promise<boolean> {
  const result = await store.transaction((tx) => tx.run('DELETE FROM admin_key WHERE name = ?', [name]), { durable: true });
  return result.changes > 0;
}

/** Keys, of one tenant when given. */
export async function listKeys(store: Queryable, tenant?: string): Promise<Array<Grant & { createdAt: string }>> {
  const rows = await store.all<GrantRow & { created_at: number }>(
    `SELECT name, role, tenant, created_at FROM admin_key ${tenant === undefined ? '' : 'WHERE tenant = ?'} ORDER BY name`,
    tenant === undefined ? [] : [tenant],
  );
  return rows.map((r) => ({ ...grantOf(r), createdAt: new Date(Number(r.created_at)).toISOString() }));
}

export async function findKey(store: Queryable, name: string): Promise<Grant | undefined> {
  const row = await store.one<GrantRow>('SELECT name, role, tenant FROM admin_key WHERE name = ?', [name]);
  return row && grantOf(row);
}

/** The key's grant when `presented` is a stored key; timing-safe on the secret part. */
export async function keyOwner(store: Queryable, presented: string): Promise<Grant | undefined> {
  const m = /^svcadm_([0-9a-f]{12})_([A-Za-z0-9_-]{32})$/.exec(presented);
  if (!m) return undefined;
  const row = await store.one<GrantRow & { digest: string }>('SELECT name, role, tenant, digest FROM admin_key WHERE id = ?', [m[1]]);
  if (!row) return undefined;
  const a = Buffer.from(digestOf(m[2]!));
  const b = Buffer.from(row.digest);
  return a.length === b.length && timingSafeEqual(a, b) ? grantOf(row) : undefined;
}
