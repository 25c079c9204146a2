import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { readdirSync, readFileSync, watch, existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync, type FSWatcher } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { buildSync, transformSync, type Message } from 'esbuild';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { ServiceRunner } from '../sandbox/runner.ts';
import type { ServiceMeta } from '../sandbox/protocol.ts';
import type { DeployOutcome } from '../sandbox/runner.ts';
import { compileModel, type InputChecker } from './model.ts';
import { tenantOf } from '../../sdk/plugin/tenants.ts';

/** A deployed service as the kernel sees it: what it declares, and its compiled input checker. */
export interface DeployedService {
  name: string;
  file: string;
  meta: ServiceMeta;
  checkInput: InputChecker | undefined;
  /** Verbs with handlers, for the Allow header of a 405. */
  allow: string;
  /** Deployed at start from the last good copy because the file did not compile: when that copy was saved. */
  lastGoodFrom?: string;
}

const SDK_ENTRY = fileURLToPath(new URL('../../sdk/index.ts', import.meta.url));

/** The SDK as one ES module, compiled into every isolate as `svc/sdk`. */
export function buildSdkBundle(): string {
  const out = buildSync({ entryPoints: [SDK_ENTRY], bundle: true, format: 'esm', platform: 'neutral', target: 'es2022', write: false });
  return out.outputFiles[0]!.text;
}

/** A service file of the services directory; its tests (`orders.test.ts`, run by `svc test`) are not services. */
export function isServiceFile(file: string): boolean {
  return /\.(ts|js|mjs)$/.test(file) && !/\.(d|test)\.[a-z]+$/.test(file) && !file.startsWith('.');
}

export function serviceName(file: string): string {
  return basename(file, extname(file));
}

/**
 * Strips TypeScript; reports errors as `file:line:col: message`. The source map lets the sandbox
 * runner report positions in the isolate (deploy errors, exceptions' stack frames) in the source.
 */
export function transpile(file: string, source: string): { code: string; map: string } | { error: string } {
  try {
    const loader = file.endsWith('.ts') ? 'ts' : 'js';
    const out = transformSync(source, { loader, format: 'esm', target: 'es2022', sourcefile: file, sourcemap: 'external', sourcesContent: false });
    return { code: out.code, map: out.map };
  } catch (err) {
    const errors = (err as { errors?: Message[] }).errors;
    if (errors?.length) return { error: errors.map((e) => `${file}:${e.location?.line ?? 0}:${e.location?.column ?? 0}: ${e.text}`).join('\n') };
    return { error: `${file}: ${(err as Error).message}` };
  }
}

/**
 * Deploys every service file of a directory into the sandbox pool and keeps them in step
 * with the files: add, change and remove deploy, redeploy and undeploy at once. A file that
 * fails to compile is reported and does not replace the last good version.
 *
 * The source of every version that deployed is kept in `<data_dir>/services-last-good/`: a file
 * saved with an error is still not serving after a restart otherwise. At start, a file that does
 * not compile deploys its last good copy instead, with an error in the log and in the services
 * list (docs/decisions/kernel.md). An upload (`upload`) is compiled before anything is written:
 * a version that does not compile never reaches the directory.
 */
/** A tenant's services: its directory, deployed under qualified names (`acme/orders`). */
export interface TenantServicesDir {
  tenant: string;
  dir: string;
}

/** Where a deployed version came from: its file (saved, found at start, or written by another node), an upload, a rollback, or the copy kept from before a restart. */
export type DeployOrigin = 'file' | 'upload' | 'rollback' | 'last-good';

/** What the registry's 'deployed' event carries: a version that now serves. */
export interface DeployedVersion {
  name: string;
  file: string;
  source: string;
  origin: DeployOrigin;
  /** Who deployed it through the management plane, when known. */
  actor?: string;
}

export class ServiceRegistry extends EventEmitter {
  private readonly deployed = new Map<string, DeployedService>();
  /** The tenants' registries, by tenant (the platform's registry holds them; docs/tenants.md). */
  private readonly tenants = new Map<string, ServiceRegistry>();
  private watching = false;
  readonly errors = new Map<string, string>();
  private watcher: FSWatcher | undefined;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private queue: Promise<unknown> = Promise.resolve();
  /** Files synced on request (syncNow) and their content then: the watcher's echo of that write is no second deploy. */
  private readonly echoes = new Map<string, string | undefined>();

  private readonly lastGoodDir: string | undefined;
  private starting = false;
  /** Runs before a newly declared tenant's services deploy: on PostgreSQL, writes the services uploaded for it (shared.ts). */
  beforeTenantStart: ((tenant: string) => Promise<void>) | undefined;

  constructor(
    readonly dir: string,
    private readonly pool: ServiceRunner,
    private readonly log: Logger,
    /** Where last good copies are kept; none without it. */
    private readonly dataDir?: string,
    /** A tenant's registry: its services' names start with `<tenant>/`. */
    readonly tenant?: string,
  ) {
    super();
    this.lastGoodDir = dataDir === undefined ? undefined : join(dataDir, 'services-last-good');
  }

  /** The service of a file of this registry's directory: `orders`, or `acme/orders` in tenant acme's. */
  private nameOf(file: string): string {
    return this.tenant === undefined ? serviceName(file) : `${this.tenant}/${serviceName(file)}`;
  }

  /** The registry that holds a (qualified) service name: a tenant's, or this one. */
  private holderOf(name: string): ServiceRegistry {
    const tenant = this.tenant === undefined ? tenantOf(name) : undefined;
    return (tenant !== undefined && this.tenants.get(tenant)) || this;
  }

  /**
   * The tenants' service directories, on every config apply: a new tenant's services deploy
   * (resolves once they did), a removed tenant's are undeployed. Its last good copies are kept
   * under `<data_dir>/tenants/<tenant>/`.
   */
  async setTenants(dirs: readonly TenantServicesDir[]): Promise<void> {
    const wanted = new Map(dirs.map((d) => [d.tenant, d.dir]));
    for (const [tenant, registry] of this.tenants) {
      if (wanted.get(tenant) === registry.dir) continue;
      this.tenants.delete(tenant);
      registry.undeployAll();
    }
    for (const [tenant, dir] of wanted) {
      if (this.tenants.has(tenant)) continue;
      // A tenant's directory is made when the tenant is declared: onboarding is a config entry, then files.
      mkdirSync(dir, { recursive: true });
      const registry = new ServiceRegistry(dir, this.pool, this.log, this.dataDir === undefined ? undefined : join(this.dataDir, 'tenants', tenant), tenant);
      registry.on('change', (name: string) => this.emit('change', name));
      registry.on('error-deploy', (name: string, error: string) => this.emit('error-deploy', name, error));
      registry.on('deployed', (version: DeployedVersion) => this.emit('deployed', version));
      this.tenants.set(tenant, registry);
      await this.beforeTenantStart?.(tenant);
      await registry.start(this.watching);
    }
  }

  /** A tenant removed: its services leave the sandboxes; its files stay where they are. */
  private undeployAll(): void {
    this.close();
    for (const name of this.deployed.keys()) {
      this.pool.undeploy(name);
      this.emit('change', name);
    }
    this.deployed.clear();
    this.errors.clear();
  }

  /** The registry of a tenant's services (undefined: the platform's, this one), if the tenant is declared. */
  forTenant(tenant: string | undefined): ServiceRegistry | undefined {
    return tenant === undefined ? this : this.tenants.get(tenant);
  }

  /** Every service file of the platform's directory and the tenants', with the service each is. */
  files(): Array<{ name: string; file: string; path: string }> {
    const own = existsSync(this.dir) ? readdirSync(this.dir).filter(isServiceFile).map((file) => ({ name: this.nameOf(file), file, path: join(this.dir, file) })) : [];
    for (const registry of this.tenants.values()) own.push(...registry.files());
    return own;
  }

  /** Services with a compile error, platform and tenants: name → error. */
  allErrors(): Map<string, string> {
    const all = new Map(this.errors);
    for (const registry of this.tenants.values()) for (const [name, error] of registry.errors) all.set(name, error);
    return all;
  }

  /** Why a service (platform or tenant) did not compile, or undefined. */
  errorOf(name: string): string | undefined {
    return this.holderOf(name).errors.get(name);
  }

  /** Why a service is quarantined (it crashed its sandbox process repeatedly), or undefined. */
  quarantineOf(name: string): string | undefined {
    return this.pool.quarantineOf(name);
  }

  get(name: string): DeployedService | undefined {
    return this.holderOf(name).deployed.get(name);
  }

  names(): string[] {
    const own = [...this.deployed.keys()];
    for (const registry of this.tenants.values()) own.push(...registry.names());
    return own;
  }

  async start(watchFiles: boolean): Promise<void> {
    this.watching = watchFiles;
    if (existsSync(this.dir)) {
      this.starting = true;
      try {
        const files = readdirSync(this.dir).filter(isServiceFile).sort();
        this.forgetLastGoodExcept(new Set(files));
        for (const file of files) await this.sync(file);
      } finally {
        this.starting = false;
      }
    } else this.log.warn({ dir: this.dir }, 'services directory does not exist');
    if (watchFiles && existsSync(this.dir)) {
      this.watcher = watch(this.dir, (_event, file) => {
        if (!file || !isServiceFile(file)) return;
        clearTimeout(this.timers.get(file));
        // Editors write in several steps; act once the file settled.
        this.timers.set(
          file,
          setTimeout(() => {
            this.timers.delete(file);
            this.queue = this.queue.then(() => (this.isEcho(file) ? undefined : this.sync(file)));
          }, 50),
        );
      });
    }
  }

  /** Waits until every file change seen so far has been deployed (tests). */
  async settled(): Promise<void> {
    while (this.timers.size) await new Promise((r) => setTimeout(r, 20));
    await this.queue;
    for (const registry of this.tenants.values()) await registry.settled();
  }

  /**
   * Deploys, redeploys or undeploys one file at once, as the watcher would on a change, and
   * resolves once that is done (the outcome is in get() and errors). For writers that must
   * report the outcome: the management plane's upload and delete.
   */
  async syncNow(file: string): Promise<void> {
    // Set first: the watcher's event for this write may be queued before this sync finishes.
    this.echoes.set(file, this.contentOf(file));
    const run = this.queue.then(() => this.sync(file));
    this.queue = run.catch(() => undefined);
    await run;
  }

  private isEcho(file: string): boolean {
    if (!this.echoes.has(file)) return false;
    const expected = this.echoes.get(file);
    this.echoes.delete(file);
    return expected === this.contentOf(file);
  }

  private contentOf(file: string): string | undefined {
    const path = join(this.dir, file);
    return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  }

  private async sync(file: string): Promise<void> {
    const name = this.nameOf(file);
    const path = join(this.dir, file);
    if (!existsSync(path)) {
      if (this.deployed.get(name)?.file === file) {
        this.deployed.delete(name);
        this.errors.delete(name);
        this.pool.undeploy(name);
        const lastGood = this.lastGoodPath(file);
        if (lastGood !== undefined) rmSync(lastGood, { force: true });
        this.log.info({ service: name, file }, 'service undeployed');
        this.emit('change', name);
      } else if (!this.deployed.has(name)) this.errors.delete(name);
      return;
    }
    const source = readFileSync(path, 'utf8');
    const outcome = await this.compile(name, file, source);
    if (!outcome.ok) {
      this.errors.set(name, outcome.error);
      this.emit('error-deploy', name, outcome.error);
      if (this.starting && !this.deployed.has(name) && (await this.deployLastGood(name, file, outcome.error))) return;
      this.log.error({ service: name, file, error: outcome.error }, this.deployed.has(name) ? 'service failed to compile; the last good version stays deployed' : 'service failed to compile');
      return;
    }
    this.accept(name, file, source, outcome.meta);
  }

  /** Transpiles and deploys a version into the sandboxes; a failure leaves the running version in place. */
  private async compile(name: string, file: string, source: string): Promise<DeployOutcome> {
    const compiled = transpile(file, source);
    return 'error' in compiled ? { ok: false, error: compiled.error } : this.pool.deploy(name, file, compiled.code, compiled.map);
  }

  /** A version that deployed: it serves, and it is the last good copy from now on. */
  private accept(name: string, file: string, source: string, meta: ServiceMeta, lastGoodFrom?: string, origin: DeployOrigin = 'file', actor?: string): void {
    if (lastGoodFrom === undefined) {
      this.errors.delete(name);
      this.keepLastGood(file, source);
    }
    this.deployed.set(name, { name, file, meta, checkInput: compileModel(meta.input), allow: meta.verbs.join(', '), lastGoodFrom });
    this.log.info({ service: name, file }, 'service deployed');
    this.emit('deployed', { name, file, source, origin: lastGoodFrom === undefined ? origin : 'last-good', actor } satisfies DeployedVersion);
    this.emit('change', name);
  }

  /**
   * Deploys a version given as text (the management plane's upload): compiled and deployed first,
   * written to the directory only once it deployed. One that does not compile changes nothing,
   * on disk or in the sandboxes, and its error is returned.
   */
  upload(file: string, source: string, origin: DeployOrigin = 'upload', actor?: string): Promise<DeployOutcome> {
    const run = this.queue.then(() => this.uploadNow(file, source, origin, actor));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async uploadNow(file: string, source: string, origin: DeployOrigin, actor: string | undefined): Promise<DeployOutcome> {
    const name = this.nameOf(file);
    // Written beside the target under a dot name (the registry ignores dot files) before anything
    // deploys: a disk that refuses it fails the upload with nothing changed.
    const temp = join(this.dir, `.${file}.${randomBytes(6).toString('hex')}.upload`);
    writeFileSync(temp, source, { mode: 0o644 });
    try {
      const outcome = await this.compile(name, file, source);
      if (!outcome.ok) return outcome;
      // The watcher's event for this rename is no second deploy.
      this.echoes.set(file, source);
      renameSync(temp, join(this.dir, file));
      this.accept(name, file, source, outcome.meta, undefined, origin, actor);
      return outcome;
    } finally {
      rmSync(temp, { force: true });
    }
  }

  private lastGoodPath(file: string): string | undefined {
    return this.lastGoodDir === undefined ? undefined : join(this.lastGoodDir, file);
  }

  private keepLastGood(file: string, source: string): void {
    const path = this.lastGoodPath(file);
    if (path === undefined) return;
    try {
      if (existsSync(path) && readFileSync(path, 'utf8') === source) return;
      mkdirSync(this.lastGoodDir!, { recursive: true, mode: 0o700 });
      const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
      writeFileSync(temp, source, { mode: 0o600 });
      renameSync(temp, path);
    } catch (err) {
      this.log.warn({ file, err }, 'could not keep the last good copy of a service');
    }
  }

  /** Copies of files deleted while the server was down: an old version must not come back under a new file of the same name. */
  private forgetLastGoodExcept(files: Set<string>): void {
    if (this.lastGoodDir === undefined || !existsSync(this.lastGoodDir)) return;
    for (const file of readdirSync(this.lastGoodDir)) if (!files.has(file)) rmSync(join(this.lastGoodDir, file), { force: true });
  }

  /** At start, a file that does not compile: its last good copy serves, loudly. */
  private async deployLastGood(name: string, file: string, error: string): Promise<boolean> {
    const path = this.lastGoodPath(file);
    if (path === undefined || !existsSync(path)) return false;
    const source = readFileSync(path, 'utf8');
    const savedAt = statSync(path).mtime.toISOString();
    const outcome = await this.compile(name, file, source);
    if (!outcome.ok) return false;
    this.log.error({ service: name, file, error, last_good_from: savedAt }, `service ${file} failed to compile: ${error.split('\n')[0]}; serving its last good version from ${savedAt}`);
    this.accept(name, file, source, outcome.meta, savedAt);
    return true;
  }

  /** Closed with the kernel: changes from other nodes are no longer taken up. */
  closed = false;

  close(): void {
    this.closed = true;
    this.watcher?.close();
    for (const t of this.timers.values()) clearTimeout(t);
    for (const registry of this.tenants.values()) registry.close();
  }
}
