import { EventEmitter } from 'node:events';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { LineCounter, parseDocument } from 'yaml';
import type { ConfigCheck, ConfigIssue, ConfigLayer, Plugin, RawConfig } from '../plugin.ts';
import { composeSchema, configSectionSchemas, crossCheck, formatIssue, zodIssueList } from './compose.ts';
import { expandTenants, relabel, tenantEntriesOf, tenantFileLabel, tenantIssues, type TenantEntry, type TenantOrigins } from './tenants.ts';
import { ConfigLayers } from './layers.ts';
import { ConfigError, readSource } from '../../sdk/plugin/config-source.ts';
import { pluginsSchema, type PluginsConfig, type SvcConfig } from './schema.ts';

/** The kernel's import point for the config file's reader, which plugins use too (sdk/plugin/config-source.ts). */
export { ConfigError, readSource };

/** Only the `plugins:` section, needed before the plugin set (and so the schema) is known. */
export function readPluginsSection(raw: unknown): PluginsConfig {
  const section = raw && typeof raw === 'object' ? (raw as Record<string, unknown>).plugins : undefined;
  const parsed = pluginsSchema.safeParse(section);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((i) => formatIssue({ path: ['plugins', ...i.path], message: i.message })));
  return parsed.data;
}

export function validate(raw: unknown, plugins: readonly Plugin[], env: NodeJS.ProcessEnv = process.env, baseDir = '.'): SvcConfig {
  return validateWithTenants(raw, plugins, env, baseDir).config;
}

/** validate(), with the entries the tenants' own config added (the admin API lists them). */
function validateWithTenants(raw: unknown, plugins: readonly Plugin[], env: NodeJS.ProcessEnv, baseDir: string): { config: SvcConfig; tenantEntries: TenantEntry[] } {
  const sections = configSectionSchemas(plugins);
  // Tenants' sections join the main ones, qualified; messages about them name where the tenant wrote them.
  const expanded = raw && typeof raw === 'object' && !Array.isArray(raw) ? expandTenants(raw as RawConfig, sections, baseDir) : { raw: raw as RawConfig, origins: new Map() as TenantOrigins };
  const fail = (list: ConfigIssue[]): never => {
    const located = list.map((issue) => relabel(issue, expanded.origins) ?? issue);
    throw new ConfigError(located.map(formatIssue), located);
  };
  const parsed = composeSchema(plugins).safeParse(expanded.raw);
  if (!parsed.success) fail(zodIssueList(parsed.error.issues));
  const config = parsed.data as SvcConfig;
  if (env.SVC_PORT !== undefined) {
    const port = Number(env.SVC_PORT);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError([`SVC_PORT: not a port number: ${env.SVC_PORT}`]);
    config.server.port = port;
  }
  // Empty counts as unset: a deployment template often defines the variable whether or not it uses it.
  if (env.SVC_STORE) config.server.store = env.SVC_STORE;
  const issues = [...tenantIssues(config, sections), ...crossCheck(config, plugins)];
  if (issues.length) fail(issues);
  return { config, tenantEntries: tenantEntriesOf(expanded) };
}

/** A check of the store's, with the tenants' own entries of the config it would apply. */
type StoreCheck = ConfigCheck & { tenantEntries?: TenantEntry[] };

/**
 * The one place config comes from. The YAML file is its first source; layers (the admin API)
 * apply on top of its data, and the result is validated whole. Listeners get every accepted
 * config; a rejected change leaves the running config in place.
 */
export class ConfigStore extends EventEmitter {
  private config: SvcConfig;
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Watchers of the directories of tenants' config files, by directory; the files watched there. */
  private readonly tenantWatchers = new Map<string, { watcher: FSWatcher; files: Set<string> }>();
  private watching = false;
  private lastText: string;
  /** The last accepted file data; layers apply to it. */
  private fileRaw: RawConfig;
  private readonly layers = new ConfigLayers();
  /** Whole-config checks beyond the schema that the kernel adds (route conflicts). */
  extraCheck: (config: SvcConfig) => ConfigIssue[] = () => [];

  constructor(
    readonly file: string,
    private readonly plugins: readonly Plugin[],
    private readonly log: Logger,
    initialText: string,
    initial: SvcConfig,
    private readonly env: NodeJS.ProcessEnv = process.env,
    initialRaw: RawConfig = {},
  ) {
    super();
    this.config = initial;
    this.lastText = initialText;
    this.fileRaw = initialRaw;
    this.runningTenantEntries = this.readTenantEntries();
  }

  current(): SvcConfig {
    return this.config;
  }

  addLayer(layer: ConfigLayer): void {
    this.layers.add(layer);
  }

  /** The file's data with every layer applied (a copy). */
  rawConfig(): RawConfig {
    return structuredClone(this.layers.applyAll(this.fileRaw));
  }

  /** The running config's entries that tenants' own config added (inline or their files), as written there, qualified (copies). */
  tenantEntries(): TenantEntry[] {
    return structuredClone(this.runningTenantEntries ?? []);
  }

  /** At start: the running config was validated from the file's data, with its tenants' files as they are (read again). */
  private readTenantEntries(): TenantEntry[] {
    try {
      return tenantEntriesOf(expandTenants(this.fileRaw, configSectionSchemas(this.plugins), dirname(this.file)));
    } catch {
      return [];
    }
  }

  private runningTenantEntries: TenantEntry[] | undefined;

  /** The file plus the layers, `candidate` in place of the layer of its name, checked whole; nothing is applied. */
  propose(candidate?: ConfigLayer, fileRaw: RawConfig = this.fileRaw): StoreCheck {
    let raw: RawConfig;
    try {
      raw = this.layers.applyAll(fileRaw, candidate);
    } catch (err) {
      return { ok: false, issues: [{ path: [], message: (err as Error).message }] };
    }
    let validated: ReturnType<typeof validateWithTenants>;
    try {
      validated = validateWithTenants(raw, this.plugins, this.env, dirname(this.file));
    } catch (err) {
      if (err instanceof ConfigError) return { ok: false, issues: err.details };
      return { ok: false, issues: [{ path: [], message: (err as Error).message }] };
    }
    const { config, tenantEntries } = validated;
    const issues = this.extraCheck(config);
    return issues.length ? { ok: false, issues } : { ok: true, config, raw, tenantEntries };
  }

  /**
   * At start, once plugins registered their layers: the layered config replaces the file's
   * before anything is built. A layered config that does not validate is logged and the file's
   * alone is used (its layers stay stored, to be fixed through their source).
   */
  async settle(): Promise<void> {
    if (this.layers.size === 0) return;
    await this.layers.ready();
    const check = this.propose();
    if (check.ok) {
      this.config = check.config;
      this.runningTenantEntries = check.tenantEntries;
      return;
    }
    // What the file alone is refused for (tenants on Node 20) is said when it is refused, not blamed on the layers.
    const ownIssues = new Set(this.extraCheck(this.config).map(formatIssue));
    const layers = check.issues.map(formatIssue).filter((issue) => !ownIssues.has(issue));
    if (layers.length) this.log.error({ layers: this.layers.names(), issues: layers }, 'config layers not in force: the file and the layers together do not validate; the file alone applies');
  }

  private applying: Promise<unknown> = Promise.resolve();

  /** Installs new file data (with the layers on top); resolves false when refused. One at a time. */
  apply(raw: unknown, source: string): Promise<boolean> {
    return this.applyChecked(raw as RawConfig, source).then((check) => check.ok);
  }

  /** Recomputes the config from the file and the layers and installs it. */
  reapply(source: string): Promise<ConfigCheck> {
    return this.applyChecked(undefined, source);
  }

  private applyChecked(fileRaw: RawConfig | undefined, source: string): Promise<ConfigCheck> {
    const next = this.applying.then(() => this.applyNow(fileRaw ?? this.fileRaw, source));
    this.applying = next.catch(() => undefined);
    return next;
  }

  private async applyNow(fileRaw: RawConfig, source: string): Promise<ConfigCheck> {
    const check = this.propose(undefined, fileRaw);
    if (!check.ok) {
      this.log.error({ source, issues: check.issues.map(formatIssue) }, 'config change refused; the running config stays');
      return check;
    }
    const next = check.config;
    if (!isDeepStrictEqual(next.plugins, this.config.plugins)) {
      this.log.warn({ source }, 'changes to plugins: apply after a restart');
    }
    const previous = this.config;
    const previousTenantEntries = this.runningTenantEntries;
    this.config = next;
    this.runningTenantEntries = check.tenantEntries;
    try {
      for (const listener of this.listeners('change')) await (listener as (c: SvcConfig, p: SvcConfig) => unknown)(next, previous);
    } catch (err) {
      this.config = previous;
      this.runningTenantEntries = previousTenantEntries;
      this.log.error({ source, err }, 'config change failed to apply; the running config stays');
      for (const listener of this.listeners('change')) await (listener as (c: SvcConfig, p: SvcConfig) => unknown)(previous, next);
      return { ok: false, issues: [{ path: [], message: `the config failed to apply: ${(err as Error).message}` }] };
    }
    this.fileRaw = fileRaw;
    this.log.info({ source }, 'config applied');
    if (this.watching) this.watchTenantFiles();
    return check;
  }

  /** Re-reads the file now. */
  async reload(): Promise<boolean> {
    return (await this.reloadMain()) !== 'refused';
  }

  /** Re-reads the main file; applies it (with every tenant's file read anew) when its text changed. */
  private async reloadMain(): Promise<'unchanged' | 'applied' | 'refused'> {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      this.log.error({ file: this.file, err: (err as Error).message }, 'config file unreadable; the running config stays');
      this.refusal = { at: new Date().toISOString(), source: this.file, issues: [{ message: `unreadable: ${(err as Error).message}` }] };
      return 'refused';
    }
    if (text === this.lastText) return 'unchanged';
    this.lastText = text;
    let raw: unknown;
    try {
      raw = readSource(text, this.env);
    } catch (err) {
      const issues = err instanceof ConfigError ? err.issues : [String((err as Error).message)];
      this.log.error({ source: this.file, issues }, 'config change refused; the running config stays');
      this.refusal = { at: new Date().toISOString(), source: this.file, issues: issues.map((message) => ({ message, line: lineInMessage(message) })) };
      return 'refused';
    }
    const check = await this.applyChecked(raw as RawConfig, this.file);
    // The Dashboard's banner: the file's last save was refused, and where; gone once a save applies.
    this.refusal = check.ok ? undefined : { at: new Date().toISOString(), source: this.file, issues: check.issues.map((i) => ({ message: formatIssue(i), line: lineOfPath(text, i.path) })) };
    return check.ok ? 'applied' : 'refused';
  }

  /**
   * A tenant's config file was saved: the whole config again, the main file's accepted data with
   * every tenant's file read anew. A refusal shows on the Dashboard's banner like the main file's,
   * with its lines in the tenant's file; a save that applies clears a tenant file's refusal (every
   * tenant file on disk validated), not the main file's.
   */
  private async reapplyTenantFile(file: string): Promise<void> {
    const check = await this.reapply(file);
    if (check.ok) {
      if (this.refusal && this.refusal.source !== this.file) this.refusal = undefined;
      return;
    }
    const label = this.tenantFileLabelOf(file);
    let text: string | undefined;
    try {
      text = label === undefined ? undefined : readFileSync(file, 'utf8');
    } catch {
      text = undefined;
    }
    const lineOf = (path: ConfigIssue['path']): number | undefined => (text !== undefined && path[0] === label ? lineOfPath(text, path.slice(1)) : undefined);
    this.refusal = { at: new Date().toISOString(), source: file, issues: check.issues.map((i) => ({ message: formatIssue(i), line: lineOf(i.path) })) };
  }

  /** How config messages name the tenant config file at this absolute path (relabel's first path segment). */
  private tenantFileLabelOf(file: string): string | undefined {
    const tenant = this.config.tenants.find((t) => t.config_file !== undefined && resolve(dirname(this.file), t.config_file) === file);
    return tenant?.config_file === undefined ? undefined : tenantFileLabel(tenant.name, tenant.config_file);
  }

  /** What changed since the debounce timer was set: the main file, and the tenant file saved last. */
  private pendingMain = false;
  private pendingTenantFile: string | undefined;

  /**
   * Saves within 50 ms apply together: an editor's rename, or a deploy that writes the main file
   * and a tenant's file at once (`git pull`), where one save's timer must not cancel the other's.
   */
  private changed(tenantFile?: string): void {
    if (tenantFile === undefined) this.pendingMain = true;
    else this.pendingTenantFile = tenantFile;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.applyChanged(), 50);
  }

  private async applyChanged(): Promise<void> {
    const main = this.pendingMain;
    const tenantFile = this.pendingTenantFile;
    this.pendingMain = false;
    this.pendingTenantFile = undefined;
    // Applying the main file read every tenant's file too; otherwise the tenant's save applies on its own.
    if (main && (await this.reloadMain()) === 'applied') return;
    if (tenantFile !== undefined) await this.reapplyTenantFile(tenantFile);
  }

  /** The config file's last save, when it was refused (the running config stayed): when, and each problem with its line where known. */
  refusal: ConfigRefusal | undefined;

  /**
   * Tenants' config files (`tenants[].config_file`) apply when saved, as the main file does: their
   * directories are watched, and a change validates the whole config again (the main file's data
   * with every tenant's file read anew).
   */
  private watchTenantFiles(): void {
    const wanted = new Map<string, Set<string>>();
    for (const t of this.config.tenants) {
      if (t.config_file === undefined) continue;
      const path = resolve(dirname(this.file), t.config_file);
      const dir = dirname(path);
      if (!wanted.has(dir)) wanted.set(dir, new Set());
      wanted.get(dir)!.add(basename(path));
    }
    for (const [dir, entry] of this.tenantWatchers) {
      if (wanted.has(dir)) continue;
      entry.watcher.close();
      this.tenantWatchers.delete(dir);
    }
    for (const [dir, files] of wanted) {
      const entry = this.tenantWatchers.get(dir);
      if (entry) {
        entry.files = files;
        continue;
      }
      try {
        const watched = { files, watcher: undefined as unknown as FSWatcher };
        watched.watcher = watch(dir, (_event, changed) => {
          if (!changed || !watched.files.has(changed)) return;
          this.changed(join(dir, changed));
        });
        this.tenantWatchers.set(dir, watched);
      } catch (err) {
        this.log.warn({ dir, err: (err as Error).message }, "cannot watch a tenant's config directory; its changes apply with the next change of the main file");
      }
    }
  }

  watch(): void {
    this.watching = true;
    this.watchTenantFiles();
    const name = basename(this.file);
    // The directory, not the file: editors replace files by renaming, which ends a watch on the file.
    this.watcher = watch(dirname(this.file), (_event, changed) => {
      if (changed !== name) return;
      this.changed();
    });
  }

  close(): void {
    this.watcher?.close();
    for (const entry of this.tenantWatchers.values()) entry.watcher.close();
    this.tenantWatchers.clear();
    clearTimeout(this.timer);
  }
}

/** A save of the config file that was refused. */
export interface ConfigRefusal {
  at: string;
  source: string;
  issues: Array<{ message: string; line?: number | undefined }>;
}

/** `… at line 12, column 3` in a YAML error: its line. */
function lineInMessage(message: string): number | undefined {
  const m = / at line (\d+)/.exec(message);
  return m ? Number(m[1]) : undefined;
}

/** The line (1-based) of the YAML node at `path` in `text`, or of its nearest ancestor there; undefined when none is. */
export function lineOfPath(text: string, path: readonly PropertyKey[]): number | undefined {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter });
  for (let n = path.length; n > 0; n--) {
    const node = doc.getIn(path.slice(0, n) as Array<string | number>, true) as { range?: [number, number, number] } | undefined;
    if (node?.range) return counter.linePos(node.range[0]).line;
  }
  return undefined;
}
