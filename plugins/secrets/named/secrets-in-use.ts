import type { Logger } from 'pino';
import { SvcError } from '../../../sdk/plugin/index.ts';
import type { NamedSecretStore } from './secret-store.ts';
import type { NamedSecret } from './schema.ts';

/** Longest wait of a plugin's first value for the first config (a plugin awaiting one inside its own onConfig must not hang the start). */
const FIRST_CONFIG_WAIT_MS = 10_000;

interface Grant {
  services: ReadonlySet<string>;
}

/**
 * The running server's named secrets: which services may use each, and the values, in the kernel
 * process only (host calls answer from here; nothing here hands a value to a service or a log).
 * Config applications and CLI changes run one after the other.
 */
export class SecretsInUse {
  private grants = new Map<string, Grant>();
  private values = new Map<string, string>();
  private readonly warnedUnset = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();
  /**
   * Settles once the first config applied (or after FIRST_CONFIG_WAIT_MS): connectors set up
   * before this plugin ask for their passwords while the kernel applies its first config, and
   * must get the values that config holds, not "no value yet".
   */
  private readonly firstApplied: Promise<void>;
  private firstAppliedNow: () => void = () => {};

  constructor(
    private readonly store: () => Promise<NamedSecretStore>,
    private readonly log: Logger,
  ) {
    this.firstApplied = new Promise<void>((resolve) => {
      this.firstAppliedNow = resolve;
      setTimeout(resolve, FIRST_CONFIG_WAIT_MS).unref();
    });
  }

  apply(secrets: readonly NamedSecret[]): Promise<void> {
    return this.serial(async () => {
      const store = await this.store();
      const outcomes = await store.apply(secrets);
      const values = new Map<string, string>();
      for (const { name } of secrets) {
        const outcome = outcomes.get(name);
        if (outcome === 'edited') this.log.info({ secret: name }, 'value of named secret taken from the config file, where it was edited');
        const value = outcome === 'unset' ? undefined : await this.readValue(store, name);
        if (typeof value === 'string') values.set(name, value);
        else if (value === undefined) this.warnUnset(name);
      }
      this.grants = new Map(secrets.map((s) => [s.name, { services: new Set(s.services) }]));
      this.values = values;
      for (const name of [...this.warnedUnset]) if (!this.grants.has(name)) this.warnedUnset.delete(name);
    }).finally(() => this.firstAppliedNow());
  }

  /** A value sent by `svc secret set` to the running server; durable before it is used. */
  setFromCli(name: string, value: string, configValue: string | undefined): Promise<void> {
    return this.serial(async () => {
      if (!this.grants.has(name)) throw new Error(`the running server has no secret named '${name}' (is the config file saved, and was it accepted?)`);
      await (await this.store()).setFromCli(name, value, configValue);
      this.values.set(name, value);
      this.warnedUnset.delete(name);
      this.log.info({ secret: name }, 'value of named secret changed with the CLI');
    });
  }

  /**
   * Takes up values another node (or the CLI with no server) changed: the one named, or all of
   * them after a reconnect. The vault has dropped its copy by then (its notification comes first).
   */
  refresh(name: string | undefined): Promise<void> {
    return this.serial(async () => {
      const store = await this.store();
      for (const granted of name === undefined ? [...this.grants.keys()] : [name]) {
        if (!this.grants.has(granted)) continue;
        const value = await this.readValue(store, granted);
        if (typeof value === 'string') {
          if (this.values.get(granted) !== value) this.log.info({ secret: granted }, 'value of named secret changed on another node');
          this.values.set(granted, value);
          this.warnedUnset.delete(granted);
        } else if (value === undefined) {
          this.values.delete(granted);
          this.warnUnset(granted);
        }
      }
    });
  }

  /** The value, for a service allowed to use it; otherwise an error the service sees (never with the value). */
  use(name: string, service: string): string {
    const grant = this.grants.get(name);
    if (grant === undefined) throw new SvcError('NOT_FOUND', `No secret named '${name}'`);
    if (!grant.services.has(service)) throw new SvcError('FORBIDDEN', `Secret '${name}' is not granted to service '${service}'`);
    const value = this.values.get(name);
    if (value === undefined) throw new SvcError('SERVICE_UNAVAILABLE', `Secret '${name}' has no value yet`);
    return value;
  }

  /**
   * The value for another plugin in this process (a connector's database password): undefined
   * when the config names no such secret or it has no value yet. Waits for a config or CLI change
   * in progress. Never for services: they go through `use`.
   */
  async valueForPlugin(name: string): Promise<string | undefined> {
    await this.firstApplied;
    await this.queue;
    return this.grants.has(name) ? this.values.get(name) : undefined;
  }

  /** The stored value; null (logged once here) when the vault cannot decrypt it. */
  private async readValue(store: NamedSecretStore, name: string): Promise<string | undefined | null> {
    try {
      return await store.value(name);
    } catch {
      this.log.error({ secret: name }, `named secret cannot be decrypted (another vault key than when it was stored?); set it again with \`svc secret set ${name}\``);
      return null;
    }
  }

  private warnUnset(name: string): void {
    if (this.warnedUnset.has(name)) return;
    this.warnedUnset.add(name);
    this.log.warn({ secret: name }, `named secret has no value: services using it get an error until it is set with \`svc secret set ${name}\``);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
