import { sqlTypes, type DataStore, type Dialect, type Migration } from '../../../sdk/plugin/index.ts';
import type { Vault } from '../../capabilities.ts';
import { open, seal } from './cipher.ts';

const OWNER = 'vault';
/** Notification of a changed value (payload: its label): other nodes drop their decrypted copy. */
const CHANGED = 'vault.changed';
function migrations(dialect: Dialect): Migration[] {
  return [
    {
      version: 1,
      up: `CREATE TABLE vault_secret (
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        nonce TEXT NOT NULL,
        box TEXT NOT NULL,
        updated_at ${sqlTypes(dialect).int} NOT NULL,
        PRIMARY KEY (owner, name)
      )`,
    },
  ];
}

interface Row {
  nonce: string;
  box: string;
}

/**
 * Secrets that must be used, not only verified (outgoing credentials, signing keys), encrypted
 * at rest. Values are decrypted once and kept in memory, where a caller needs them anyway.
 */
export class SqlVault implements Vault {
  private readonly cache = new Map<string, string | undefined>();

  private constructor(
    private readonly store: DataStore,
    private readonly key: Buffer,
    private readonly now: () => number,
  ) {}

  static async open(store: DataStore, key: Buffer, now: () => number): Promise<SqlVault> {
    await store.migrate(OWNER, migrations(store.dialect));
    return new SqlVault(store, key, now);
  }

  /**
   * Drops decrypted values another node (or the CLI) changed, so the next get reads the row;
   * everything after a reconnect. The running server follows; a CLI process need not.
   */
  followChanges(): () => void {
    return this.store.listen(
      CHANGED,
      (label) => void this.cache.delete(label),
      () => this.cache.clear(),
    );
  }

  async get(owner: string, name: string): Promise<string | undefined> {
    const label = labelOf(owner, name);
    if (this.cache.has(label)) return this.cache.get(label);
    const row = await this.store.one<Row>('SELECT nonce, box FROM vault_secret WHERE owner = ? AND name = ?', [owner, name]);
    let value: string | undefined;
    if (row) {
      try {
        value = this.unseal(label, row);
      } catch {
        throw new Error(`vault: the secret ${label} cannot be decrypted (another vault key, or the row was altered)`);
      }
    }
    this.cache.set(label, value);
    return value;
  }

  async put(owner: string, name: string, value: string): Promise<void> {
    const label = labelOf(owner, name);
    const sealed = seal(this.key, label, value);
    await this.store.transaction(
      (tx) =>
        tx.run(
          `INSERT INTO vault_secret (owner, name, nonce, box, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (owner, name) DO UPDATE SET nonce = excluded.nonce, box = excluded.box, updated_at = excluded.updated_at`,
          [owner, name, sealed.nonce.toString('base64'), sealed.box.toString('base64'), this.now()],
        ),
      { durable: true },
    );
    this.cache.set(label, value);
    await this.store.notify(CHANGED, label);
  }

  async delete(owner: string, name: string): Promise<void> {
    await this.store.transaction((tx) => tx.run('DELETE FROM vault_secret WHERE owner = ? AND name = ?', [owner, name]), { durable: true });
    this.cache.set(labelOf(owner, name), undefined);
    await this.store.notify(CHANGED, labelOf(owner, name));
  }

  /**
   * Whether this vault's key opens what the table already holds (true when it holds nothing).
   * A process other than the server (the CLI, offline) checks it before writing, so a key that
   * differs from the server's (SVC_VAULT_KEY set in one environment only) is refused up front.
   */
  async opensExistingRows(): Promise<boolean> {
    const row = await this.store.one<Row & { owner: string; name: string }>('SELECT owner, name, nonce, box FROM vault_secret ORDER BY updated_at DESC LIMIT 1');
    if (row === undefined) return true;
    try {
      this.unseal(labelOf(row.owner, row.name), row);
      return true;
    } catch {
      return false;
    }
  }

  private unseal(label: string, row: Row): string {
    return open(this.key, label, { nonce: Buffer.from(row.nonce, 'base64'), box: Buffer.from(row.box, 'base64') });
  }

  async names(owner: string): Promise<string[]> {
    const rows = await this.store.all<{ name: string }>('SELECT name FROM vault_secret WHERE owner = ? ORDER BY name', [owner]);
    return rows.map((r) => r.name);
  }
}

/** Owner and name, unambiguous whatever characters they hold. */
function labelOf(owner: string, name: string): string {
  return `${owner.length}:${owner}/${name}`;
}
