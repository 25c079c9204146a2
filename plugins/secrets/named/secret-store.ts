import { createHash, timingSafeEqual } from 'node:crypto';
import { sqlTypes, type DataStore, type Dialect, type Migration } from '../../../sdk/plugin/index.ts';
import type { Vault } from '../../capabilities.ts';

/** This plugin's owner name: of its table's migrations, and in the vault, of the values in use. */
const OWNER = 'secrets';
/** Vault owner of the config file's value as last applied: an edit is a value that differs from it. */
const CONFIG_OWNER = 'secrets.config';
/** Notification of a named secret whose value changed (payload: its name), for the other nodes. */
export const NAMED_SECRET_CHANGED = 'secrets.named';

function migrations(dialect: Dialect): Migration[] {
  return [
    {
      version: 1,
      up: `CREATE TABLE named_secret (
        name TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        updated_at ${sqlTypes(dialect).int} NOT NULL
      )`,
    },
  ];
}

/** Where the value in use came from. */
export type SecretSource = 'config' | 'cli';

export interface SecretState {
  source: SecretSource;
  updatedAt: number;
}

/** One `secrets[]` entry as the store needs it (after `${ENV}` substitution). */
export interface ConfiguredSecret {
  name: string;
  value?: string | undefined;
}

/**
 * What applying a config did to one secret, for the log (never the value): a first config value,
 * an edited one that replaced the value in use, a value kept, or none at all.
 */
export type Outcome = 'new' | 'edited' | 'kept' | 'unset';

/**
 * The named secrets' values, encrypted in the vault, and where each came from. Precedence is the
 * security definitions' (docs/decisions/security.md, "Secret precedence"): the latest change
 * wins. A config value replaces the value in use only when it differs from the config value
 * applied before, so a value set with the CLI survives reloads and restarts until the config's
 * value is edited. Used by the running server and, with no server, by the CLI.
 */
export class NamedSecretStore {
  private constructor(
    private readonly store: DataStore,
    private readonly vault: Vault,
    private readonly now: () => number,
  ) {}

  static async open(store: DataStore, vault: Vault, now: () => number): Promise<NamedSecretStore> {
    await store.migrate(OWNER, migrations(store.dialect));
    return new NamedSecretStore(store, vault, now);
  }

  value(name: string): Promise<string | undefined> {
    return this.vault.get(OWNER, name);
  }

  /**
   * Brings the stored values in step with a config: config values that are new or edited take
   * over; secrets that left the config are forgotten (a name added again starts unset).
   */
  async apply(secrets: readonly ConfiguredSecret[]): Promise<Map<string, Outcome>> {
    const states = await secretStates(this.store);
    const outcomes = new Map<string, Outcome>();
    for (const { name, value } of secrets) {
      const state = states.get(name);
      if (value !== undefined && (state === undefined || (await this.isEdit(name, value, state)))) {
        await this.write(name, value, value, 'config');
        outcomes.set(name, state === undefined ? 'new' : 'edited');
      } else {
        outcomes.set(name, state === undefined ? 'unset' : 'kept');
      }
    }
    for (const name of states.keys()) if (!outcomes.has(name)) await this.forget(name);
    return outcomes;
  }

  /** A value set with the CLI. `configValue`: the config file's value when the CLI ran, acknowledged so it does not count as a later edit. */
  setFromCli(name: string, value: string, configValue: string | undefined): Promise<void> {
    return this.write(name, value, configValue, 'cli');
  }

  private async isEdit(name: string, configValue: string, state: SecretState): Promise<boolean> {
    let applied: string | undefined;
    try {
      // A config-sourced value is the config value last applied: compare with it directly.
      applied = await this.vault.get(state.source === 'config' ? OWNER : CONFIG_OWNER, name);
    } catch {
      // Sealed under another vault key: the config's value is the one left that can be used.
      return true;
    }
    return applied === undefined || !sameText(applied, configValue);
  }

  /**
   * Value first, then the acknowledged config value, then the row: the server uses a value only
   * once its row exists, so a crash in between leaves the secret as it was before, or unset.
   */
  private async write(name: string, value: string, configValue: string | undefined, source: SecretSource): Promise<void> {
    await this.vault.put(OWNER, name, value);
    if (configValue === undefined) await this.vault.delete(CONFIG_OWNER, name);
    else await this.vault.put(CONFIG_OWNER, name, configValue);
    await this.store.transaction(
      (tx) =>
        tx.run(
          `INSERT INTO named_secret (name, source, updated_at) VALUES (?, ?, ?)
           ON CONFLICT (name) DO UPDATE SET source = excluded.source, updated_at = excluded.updated_at`,
          [name, source, this.now()],
        ),
      { durable: true },
    );
    await this.store.notify(NAMED_SECRET_CHANGED, name);
  }

  private async forget(name: string): Promise<void> {
    await this.store.transaction((tx) => tx.run('DELETE FROM named_secret WHERE name = ?', [name]), { durable: true });
    await this.vault.delete(OWNER, name);
    await this.vault.delete(CONFIG_OWNER, name);
    await this.store.notify(NAMED_SECRET_CHANGED, name);
  }
}

/** Where each stored secret's value came from; needs no vault key (`svc secret list`). */
export async function secretStates(store: DataStore): Promise<Map<string, SecretState>> {
  await store.migrate(OWNER, migrations(store.dialect));
  const rows = await store.all<{ name: string; source: SecretSource; updated_at: number }>('SELECT name, source, updated_at FROM named_secret');
  return new Map(rows.map((r) => [r.name, { source: r.source, updatedAt: r.updated_at }]));
}

/** Equality that takes the same time wherever two values differ. */
function sameText(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a, 'utf8').digest(), createHash('sha256').update(b, 'utf8').digest());
}
