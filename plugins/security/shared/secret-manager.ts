import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../../../sdk/plugin/index.ts';
import type { DataStore } from '../../../sdk/plugin/index.ts';
import type { CredentialBook, SecretRecord } from './credential-book.ts';
import { hashSecret, KeyedDigest, randomSecret, verifySecret } from './secrets.ts';
import { deleteSecretRowsExcept, migrateSecretStore, secretRow, secretRows, writeSecretRow, type SecretRow } from './secret-store.ts';

/** One definition as the config states it (after `${ENV}` substitution). */
export interface DefinitionInput {
  name: string;
  /** Basic Auth username; undefined for API keys. */
  username?: string;
  /** The config file's secret; undefined when the config gives none. */
  secret?: string;
}

/**
 * A definition a plugin adds in code (capability 'security.basic.register').
 * builtin: exists in every environment, random UUID secret generated once and stored.
 * ephemeral: the given secret, in memory only.
 */
export interface Registration {
  name: string;
  username?: string;
  lifetime: 'builtin' | 'ephemeral';
  password?: string;
}

/** Notification that a type's stored secrets changed (payload: the type), for the other nodes. */
export const SECRETS_CHANGED = 'security.secrets';

export interface SecretManagerDeps {
  store: DataStore;
  clock: Clock;
  log: Logger;
}

interface Registered {
  username: string | undefined;
  lifetime: Registration['lifetime'];
  /** Ephemeral definitions only: the hash of the given secret. */
  hash: string | undefined;
}

/**
 * Keeps one security type's secrets in step across the config file, the data store and
 * the in-memory CredentialBook. Precedence (docs/decisions/security.md): the latest change
 * wins. A config value replaces the stored secret only when that value differs from the one
 * applied before; otherwise a secret set with the CLI since then stays. No config value and
 * nothing stored: a random secret is generated and stored (its value is never logged).
 */
export class SecretManager {
  private readonly digest = new KeyedDigest();
  /** Last config value seen per definition (as a digest) and its stored hash: reloads skip the KDF. */
  private readonly configSeen = new Map<string, { digest: string; configHash: string }>();
  private readonly usernames = new Map<string, string | undefined>();
  private readonly warnedGenerated = new Set<string>();
  private readonly registered = new Map<string, Registered>();
  private configNames = new Set<string>();
  private lastConfig: readonly DefinitionInput[] | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly deps: SecretManagerDeps,
    readonly book: CredentialBook,
    /** Word used in messages and CLI: password or key. */
    private readonly secretWord: string,
    /** CLI command that rotates this type's secrets, for the log line. */
    private readonly cliCommand: string,
  ) {}

  /** Applies a config's definitions of this type. Calls run one after the other. */
  apply(definitions: readonly DefinitionInput[]): Promise<void> {
    return this.serial(() => this.reconcile(definitions));
  }

  /** Adds a definition from code; idempotent per name. A config definition of the same name wins. */
  register(registration: Registration): Promise<void> {
    return this.serial(async () => {
      if (this.registered.has(registration.name)) return;
      if (registration.lifetime === 'ephemeral' && registration.password === undefined) {
        throw new Error(`ephemeral definition '${registration.name}' needs a password`);
      }
      const hash = registration.lifetime === 'ephemeral' ? await hashSecret(registration.password!) : undefined;
      this.registered.set(registration.name, { username: registration.username, lifetime: registration.lifetime, hash });
      if (this.lastConfig !== undefined) await this.reconcile(this.lastConfig);
    });
  }

  /** Installs a hash set through the CLI (control op), persisted before it takes effect. */
  setHash(definition: string, hash: string, configHash: string | null): Promise<void> {
    return this.serial(async () => {
      if (this.book.current(definition) === undefined) throw new Error(`no ${this.book.type} definition named '${definition}'`);
      const registered = this.configNames.has(definition) ? undefined : this.registered.get(definition);
      if (registered?.lifetime === 'ephemeral') throw new Error(`'${definition}' lives in memory only (svc demo); it has no ${this.secretWord} to set`);
      await this.deps.store.transaction(
        (tx) =>
          writeSecretRow(tx, {
            definition,
            type: this.book.type,
            secret_hash: hash,
            source: 'cli',
            config_hash: configHash,
            builtin: registered !== undefined,
            updated_at: this.deps.clock.now(),
          }),
        { durable: true },
      );
      this.book.put(this.book.makeRecord(definition, hash, this.usernames.get(definition)));
      await this.deps.store.notify(SECRETS_CHANGED, this.book.type);
      this.deps.log.info({ definition, type: this.book.type }, `${this.secretWord} of security definition changed with the CLI`);
    });
  }

  /**
   * Follows secrets other nodes (or the CLI with no server) store: a rotation there is in force
   * here as soon as its notification arrives, and everything is read again after a reconnect.
   */
  followChanges(): () => void {
    return this.deps.store.listen(
      SECRETS_CHANGED,
      (type) => (type === this.book.type ? this.serial(() => this.refresh()) : undefined),
      () => this.serial(() => this.refresh()),
    );
  }

  /**
   * Installs the stored hash of every definition in force whose row differs from its record.
   * Reads only: the config applied here stays as it is, and so do definitions in memory only.
   */
  private async refresh(): Promise<void> {
    if (this.lastConfig === undefined) return;
    const rows = await secretRows(this.deps.store, this.book.type);
    for (const [name, username] of this.usernames) {
      const current = this.book.current(name);
      const row = rows.get(name);
      if (current === undefined || row === undefined || row.secret_hash === current.hash) continue;
      if (!this.configNames.has(name) && this.registered.get(name)?.lifetime === 'ephemeral') continue;
      this.book.put(this.book.makeRecord(name, row.secret_hash, username));
      this.deps.log.info({ definition: name, type: this.book.type }, `${this.secretWord} of security definition changed on another node`);
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async reconcile(definitions: readonly DefinitionInput[]): Promise<void> {
    const { store, clock } = this.deps;
    await migrateSecretStore(store);
    const rows = await secretRows(store, this.book.type);
    const now = clock.now();
    const writes: SecretRow[] = [];
    const records: SecretRecord[] = [];
    const install = (name: string, hash: string, username: string | undefined) => {
      const previous = this.book.current(name);
      // Same hash and username: keep the record object, so cached verifications stay valid.
      const unchanged = previous !== undefined && previous.hash === hash && this.usernames.get(name) === username;
      records.push(unchanged ? previous : this.book.makeRecord(name, hash, username));
      this.usernames.set(name, username);
    };
    const configNames = new Set(definitions.map((d) => d.name));
    for (const def of definitions) install(def.name, await this.configHash(def, rows.get(def.name), writes, now), def.username);
    for (const [name, reg] of this.registered) {
      if (configNames.has(name)) continue;
      install(name, await (reg.hash ?? this.builtinHash(name, rows.get(name), writes, now)), reg.username);
    }
    await store.transaction(
      async (tx) => {
        for (const row of writes) await writeSecretRow(tx, row);
        await deleteSecretRowsExcept(tx, this.book.type, configNames);
      },
      { durable: true },
    );
    // Nodes starting together may each generate a secret: the last one stored wins everywhere.
    if (writes.length > 0) await store.notify(SECRETS_CHANGED, this.book.type);
    const kept = new Set(records.map((r) => r.definition));
    for (const name of [...this.usernames.keys()]) if (!kept.has(name)) this.forget(name);
    this.book.replaceAll(records);
    this.configNames = configNames;
    this.lastConfig = definitions;
  }

  private async configHash(def: DefinitionInput, row: SecretRow | undefined, writes: SecretRow[], now: number): Promise<string> {
    const base = { definition: def.name, type: this.book.type, builtin: false, updated_at: now };
    if (def.secret !== undefined) {
      const digest = this.digest.text(def.secret);
      if (row?.config_hash != null && (await this.sameConfigValue(def.name, def.secret, digest, row.config_hash))) {
        this.configSeen.set(def.name, { digest, configHash: row.config_hash });
        return row.secret_hash;
      }
      const hash = await hashSecret(def.secret);
      writes.push({ ...base, secret_hash: hash, source: 'config', config_hash: hash });
      this.configSeen.set(def.name, { digest, configHash: hash });
      if (row !== undefined) this.deps.log.info({ definition: def.name, type: this.book.type }, `${this.secretWord} of security definition taken from the config file`);
      return hash;
    }
    this.configSeen.delete(def.name);
    if (row !== undefined) {
      if (row.source === 'generated') this.warnGenerated(def.name);
      return row.secret_hash;
    }
    return this.generate(def.name, { ...base, config_hash: null }, writes, randomSecret());
  }

  private builtinHash(name: string, row: SecretRow | undefined, writes: SecretRow[], now: number): string | Promise<string> {
    if (row !== undefined) {
      if (row.source === 'generated') this.warnGenerated(name);
      return row.secret_hash;
    }
    return this.generate(name, { definition: name, type: this.book.type, builtin: true, config_hash: null, updated_at: now }, writes, randomUUID());
  }

  private async generate(name: string, base: Omit<SecretRow, 'secret_hash' | 'source'>, writes: SecretRow[], secret: string): Promise<string> {
    const hash = await hashSecret(secret);
    writes.push({ ...base, secret_hash: hash, source: 'generated' });
    this.warnGenerated(name);
    return hash;
  }

  private async sameConfigValue(name: string, secret: string, digest: string, configHash: string): Promise<boolean> {
    const seen = this.configSeen.get(name);
    if (seen !== undefined && seen.digest === digest && seen.configHash === configHash) return true;
    return verifySecret(secret, configHash);
  }

  private warnGenerated(name: string): void {
    if (this.warnedGenerated.has(name)) return;
    this.warnedGenerated.add(name);
    this.deps.log.warn(
      { definition: name, type: this.book.type },
      `security definition has a random ${this.secretWord} nobody knows; set it with \`${this.cliCommand} ${name}\` or in the config file before use`,
    );
  }

  private forget(name: string): void {
    this.usernames.delete(name);
    this.configSeen.delete(name);
    this.warnedGenerated.delete(name);
  }
}

/**
 * What the CLI records when no server runs: the same row the server's setHash writes.
 * `configHash` acknowledges the config file's value at this moment, so the next start
 * does not mistake it for a newer edit. A built-in definition stays built-in.
 */
export async function storeSecretOffline(
  store: DataStore,
  row: { definition: string; type: string; hash: string; configHash: string | null; now: number },
): Promise<void> {
  await migrateSecretStore(store);
  await store.transaction(
    async (tx) => {
      const existing = await secretRow(tx, row.definition);
      await writeSecretRow(tx, {
        definition: row.definition,
        type: row.type,
        secret_hash: row.hash,
        source: 'cli',
        config_hash: row.configHash,
        builtin: existing?.type === row.type && existing.builtin,
        updated_at: row.now,
      });
    },
    { durable: true },
  );
  await store.notify(SECRETS_CHANGED, row.type);
}

/** Whether the store knows a built-in definition of this name and type (the CLI's check when config does not name it). */
export async function isStoredBuiltin(store: DataStore, type: string, definition: string): Promise<boolean> {
  await migrateSecretStore(store);
  const row = await secretRow(store, definition);
  return row !== undefined && row.type === type && row.builtin;
}
