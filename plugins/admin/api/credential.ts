import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { hashSecret, isScryptHash, randomSecret, verifySecret, type DataStore, type Queryable } from '../../../sdk/plugin/index.ts';
import { ADMIN_USER } from './schema.ts';
import { migrateAdmin } from './store.ts';

/**
 * The admin account's password (scrypt, as security definitions' secrets) and the API keys of
 * automation. Keys are random 192-bit strings, so a SHA-256 digest is enough to store them
 * (no guessing to slow down) and a request costs no KDF; passwords get scrypt.
 */

const KEY_PREFIX = 'svcadm_';

export async function passwordHash(store: Queryable): Promise<string | undefined> {
  const row = await store.one<{ password_hash: string }>('SELECT password_hash FROM admin_user WHERE username = ?', [ADMIN_USER]);
  return row?.password_hash;
}

export async function storePasswordHash(store: DataStore, hash: string, now: number): Promise<void> {
  if (!isScryptHash(hash)) throw new Error('not a scrypt hash of this server');
  await migrateAdmin(store);
  await store.transaction(
    (tx) =>
      tx.run(
        `INSERT INTO admin_user (username, password_hash, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (username) DO UPDATE SET password_hash = excluded.password_hash, updated_at = excluded.updated_at`,
        [ADMIN_USER, hash, now],
      ),
    { durable: true },
  );
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

export async function checkPassword(store: Queryable, password: string, dummy: () => Promise<string>): Promise<boolean> {
  const stored = await passwordHash(store);
  // Without a stored hash the same KDF runs, so timing tells nothing.
  return verifySecret(password, stored ?? (await dummy()));
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

export async function storeKey(store: DataStore, key: { id: string; name: string; digest: string }, now: number): Promise<void> {
  await migrateAdmin(store);
  await store.transaction(
    async (tx) => {
      if (await tx.one('SELECT 1 AS x FROM admin_key WHERE name = ?', [key.name])) throw new Error(`an API key named '${key.name}' exists already`);
      await tx.run('INSERT INTO admin_key (id, name, digest, created_at) VALUES (?, ?, ?, ?)', [key.id, key.name, key.digest, now]);
    },
    { durable: true },
  );
}

export async function deleteKey(store: DataStore, name: string): Promise<boolean> {
  const result = await store.transaction((tx) => tx.run('DELETE FROM admin_key WHERE name = ?', [name]), { durable: true });
  return result.changes > 0;
}

export async function listKeys(store: Queryable): Promise<Array<{ name: string; createdAt: string }>> {
  const rows = await store.all<{ name: string; created_at: number }>('SELECT name, created_at FROM admin_key ORDER BY name');
  return rows.map((r) => ({ name: r.name, createdAt: new Date(Number(r.created_at)).toISOString() }));
}

/** The key's name when `presented` is a stored key; timing-safe on the secret part. */
export async function keyOwner(store: Queryable, presented: string): Promise<string | undefined> {
  const m = /^svcadm_([0-9a-f]{12})_([A-Za-z0-9_-]{32})$/.exec(presented);
  if (!m) return undefined;
  const row = await store.one<{ name: string; digest: string }>('SELECT name, digest FROM admin_key WHERE id = ?', [m[1]]);
  if (!row) return undefined;
  const a = Buffer.from(digestOf(m[2]!));
  const b = Buffer.from(row.digest);
  return a.length === b.length && timingSafeEqual(a, b) ? row.name : undefined;
}
