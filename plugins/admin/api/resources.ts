import type { KernelApi } from '../../../sdk/plugin/index.ts';
import type { Vault } from '../../capabilities.ts';
import { SvcError, type ConfigIssue, type RawConfig } from '../../../sdk/plugin/index.ts';
import { tenantOf } from '../../../sdk/plugin/tenants.ts';
import { auditValue, resourceSections, type ResourceSection } from './catalogue.ts';
import { IssuesError, type ResourceIssue } from './errors.ts';
import { adminLayer, keyOf, LAYER_NAME, nameOf, type Entry, type Records } from './layer.ts';
import { reaches, type Principal } from './roles.ts';
import { entrySchemaOf, PLATFORM_SECTIONS, TenantScope } from './scope.ts';
import { deleteOverride, readOverrides, writeAudit, writeOverride, type OverrideRecord } from './store.ts';

const VAULT_OWNER = 'admin';
/** Notification that the admin overrides changed, for the other nodes (no payload: they reload all). */
const OVERRIDES_CHANGED = 'admin.overrides';
const vaultName = (section: string, name: string, key: string) => `${section}/${name}/${key}`;

export interface ResourceView {
  name: string;
  /**
   * Where the running entry comes from: the config file, an admin edit that wins over it, or a
   * tenant's own config (inline or its config_file), which only that config changes.
   */
  source: 'file' | 'admin' | 'tenant_config';
  /** A tenant_config entry's place: `tenants[acme].config_file (tenants/acme.yaml).channel_rest[0]`. */
  origin?: string;
  /** The entry as written (defaults not filled in), write-only values left out. */
  entry: Entry;
  /** Write-only keys that hold a value. */
  secretsSet: string[];
}

/** One change among those applied together (an API call, or every entry of an import). */
type Change = { section: string; name: string; action: 'upsert'; entry: Entry } | { section: string; name: string; action: 'delete' | 'unoverride' };

/**
 * The config resources of the admin API: every named-entry list section, read from the effective
 * config and changed through the admin layer. A change is checked whole with the file's schemas,
 * persisted (write-only values in the vault), applied at once and audited.
 */
export class AdminResources {
  private records: Records = new Map();
  private readonly seenFile = new Map<string, unknown>();
  /** The data under the admin layer (the file, and layers before this one) at its last apply. */
  private underlying: RawConfig = {};
  private sections: ResourceSection[] | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private loaded = false;

  readonly scope: TenantScope;

  constructor(private readonly kernel: KernelApi) {
    this.scope = new TenantScope(kernel);
  }

  /**
   * Follows edits made through another node's admin API: reload the overrides (write-only values
   * from the vault, which dropped its copies first) and apply the config again, so every node
   * runs the same config. Everything is read again after a reconnect.
   */
  followChanges(): () => void {
    const reload = () => this.serial(() => this.reload());
    return this.kernel.store.listen(OVERRIDES_CHANGED, reload, reload);
  }

  private async reload(): Promise<void> {
    // Before the first load, that load reads the latest records anyway; a node shutting down applies nothing more.
    if (!this.loaded || this.kernel.lifecycle() === 'draining') return;
    const before = fingerprint(this.records);
    await this.load();
    if (fingerprint(this.records) === before) return;
    const applied = await this.kernel.reapplyConfig('admin API (another node)');
    if (applied.ok) this.kernel.log.info('admin overrides changed on another node: config applied');
    else this.kernel.log.error({ issues: applied.issues }, 'admin overrides changed on another node, and the config they give does not apply here');
  }

  /** The layer registered with the kernel: it reads the records in force at each apply. */
  layer() {
    const warn = (section: string, name: string) =>
      this.kernel.log.warn({ section, name }, `admin override wins for ${section} '${name}': the config file's version of it is ignored until the override is removed (DELETE /admin/api/overrides/${section}/${name})`);
    return {
      name: LAYER_NAME,
      apply: (raw: RawConfig) => {
        this.underlying = raw;
        return adminLayer(this.records, warn, this.seenFile).apply(raw);
      },
      ready: () => this.load(),
    };
  }

  private vault(): Vault {
    const vault = this.kernel.lookup('secrets.vault');
    if (vault === undefined) throw new Error("admin: no 'secrets.vault' capability");
    return vault;
  }

  private async load(): Promise<void> {
    const records: Records = new Map();
    for (const r of await readOverrides(this.kernel.store)) {
      if (r.action === 'upsert' && r.entry) {
        const entry = { ...r.entry };
        for (const key of this.section(r.section)?.writeOnly ?? []) {
          const value = await this.vault().get(VAULT_OWNER, vaultName(r.section, r.name, key));
          if (value !== undefined) entry[key] = value;
        }
        r.entry = entry;
      }
      records.set(keyOf(r.section, r.name), r);
    }
    this.records = records;
    this.loaded = true;
  }

  /** Every resource section; `p` given: those it sees (a tenant's administrators do not see `tenants`). */
  catalogue(p?: Principal): ResourceSection[] {
    const all = (this.sections ??= resourceSections(this.kernel));
    return p?.tenant === undefined ? all : all.filter((s) => !PLATFORM_SECTIONS.has(s.name));
  }

  section(name: string, p?: Principal): ResourceSection | undefined {
    return this.catalogue(p).find((s) => s.name === name);
  }

  requireSection(name: string, p?: Principal): ResourceSection {
    const section = this.section(name, p);
    if (!section) throw new SvcError('NOT_FOUND', `No resource section '${name}'`);
    return section;
  }

  /** A section's entries, those of the principal's tenant for a tenant's administrator. */
  list(section: string, p?: Principal): ResourceView[] {
    const s = this.requireSection(section, p);
    const entries = this.kernel.rawConfig()[section];
    const visible = (e: unknown) => nameOf(e) !== undefined && (p === undefined || reaches(p, nameOf(e)!));
    const own = (Array.isArray(entries) ? entries : []).filter(visible).map((e) => this.view(s, e as Entry));
    const tenants = this.tenantConfigEntries(section)
      .filter((t) => visible(t.entry))
      .map((t) => ({ ...this.view(s, t.entry as Entry), source: 'tenant_config' as const, origin: t.origin }));
    return [...own, ...tenants];
  }

  /** A section's entries that tenants' own config adds: the admin API shows them, and changes none. */
  private tenantConfigEntries(section: string): Array<{ entry: Record<string, unknown>; origin: string }> {
    return this.kernel.tenantConfigEntries().filter((t) => t.section === section);
  }

  /** Where a tenant's own config writes this entry, if it does: that config is where it changes. */
  private tenantOrigin(section: string, name: string): string | undefined {
    return this.tenantConfigEntries(section).find((t) => nameOf(t.entry) === name)?.origin;
  }

  /** 409 for an entry a tenant's own config writes. */
  private refuseTenantConfig(section: string, name: string): void {
    const origin = this.tenantOrigin(section, name);
    if (origin !== undefined) throw new SvcError('CONFLICT', `${section} '${name}' is written in ${origin}: change it there`);
  }

  /** list(), with the write-only fields a plugin keeps in the store (set with a CLI command) marked set too. */
  async listShown(section: string, p?: Principal): Promise<ResourceView[]> {
    return this.markStored(section, this.list(section, p));
  }

  /** get(), with the stored write-only fields marked set (listShown). */
  async getShown(section: string, name: string, p?: Principal): Promise<ResourceView> {
    const [view] = await this.markStored(section, [this.get(section, name, p)]);
    return view!;
  }

  /**
   * A value set with `svc secdef set-password` or `svc secret set` is in the store, not in the
   * entry: without this an operator saw such a field as not set, and might set it again. The
   * plugins that keep them say which entries hold one (contributes.storedSecrets).
   */
  private async markStored(section: string, views: ResourceView[]): Promise<ResourceView[]> {
    for (const stored of this.kernel.contributions().flatMap((c) => c.storedSecrets ?? [])) {
      if (stored.section !== section) continue;
      const names = new Set(await stored.entries(this.kernel.store));
      for (const view of views) if (names.has(view.name) && !view.secretsSet.includes(stored.field)) view.secretsSet.push(stored.field);
    }
    return views;
  }

  get(section: string, name: string, p?: Principal): ResourceView {
    const found = this.list(section, p).find((v) => v.name === name);
    if (!found) throw new SvcError('NOT_FOUND', notFound(section)(name));
    return found;
  }

  overrides(p?: Principal): Array<Omit<OverrideRecord, 'entry' | 'updatedAt'> & { updatedAt: string }> {
    return [...this.records.values()]
      .filter((r) => p === undefined || (this.section(r.section, p) !== undefined && reaches(p, r.name)))
      .map((r) => ({ section: r.section, name: r.name, action: r.action, updatedAt: new Date(r.updatedAt).toISOString(), updatedBy: r.updatedBy }));
  }

  /** The stored name a request's `{name}` means for the principal (404 for another tenant's). */
  resolve(p: Principal, section: string, name: string): string {
    return this.scope.resolve(p, name, notFound(section));
  }

  /** An entry a tenant's administrator sent, qualified into its tenant; a platform administrator's as sent. */
  private scoped(p: Principal, section: string, entry: Entry): Entry {
    if (p.tenant === undefined) return { ...entry };
    const sectionSchema = this.kernel.configSections()[section];
    return this.scope.entry(p, sectionSchema && entrySchemaOf(sectionSchema), entry, notFound(section));
  }

  private view(section: ResourceSection, entry: Entry): ResourceView {
    const name = nameOf(entry)!;
    const shown: Entry = {};
    const secretsSet: string[] = [];
    for (const [k, v] of Object.entries(entry)) {
      if (section.writeOnly.includes(k)) {
        if (v !== undefined && v !== null && v !== '') secretsSet.push(k);
      } else shown[k] = v;
    }
    return { name, source: this.records.get(keyOf(section.name, name))?.action === 'upsert' ? 'admin' : 'file', entry: shown, secretsSet };
  }

  /** Creates (`create`: 409 when it exists) or replaces an entry. Write-only keys left out keep their value; null clears one. */
  upsert(sectionName: string, name: string | undefined, body: unknown, p: Principal, mode: 'create' | 'put'): Promise<{ created: boolean; view: ResourceView }> {
    return this.serial(async () => {
      const section = this.requireSection(sectionName, p);
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new SvcError('BAD_REQUEST', 'The body must be a JSON object: the entry');
      const written = name !== undefined && (body as Entry).name === undefined ? { ...(body as Entry), name } : (body as Entry);
      const entry = this.scoped(p, sectionName, written);
      if (name === undefined) {
        if (typeof entry.name !== 'string' || entry.name === '') throw new IssuesError('INVALID_INPUT', 'Invalid entry', [{ path: ['name'], field: ['name'], message: 'required' }]);
        name = entry.name;
      } else if (entry.name === undefined) entry.name = name;
      else if (entry.name !== name) throw new IssuesError('INVALID_INPUT', 'Invalid entry', [{ path: ['name'], field: ['name'], message: `must be '${name}' (the name in the URL); a rename is a new entry and a delete` }]);
      this.refuseTenantConfig(sectionName, name);
      const existing = this.currentEntry(sectionName, name);
      if (mode === 'create' && existing) throw new SvcError('CONFLICT', `A ${sectionName} entry named '${name}' exists already`);
      const full = withKeptSecrets(section, entry, existing);
      await this.commit([{ section: sectionName, name, action: 'upsert', entry: full }], p.who, mode === 'create' || !existing ? 'create' : 'update', {
        keys: Object.keys(body).filter((k) => !section.writeOnly.includes(k)),
        secretsChanged: section.writeOnly.filter((k) => k in entry),
        changed: changedFields(section, existing, full),
      });
      return { created: !existing, view: this.get(sectionName, name, p) };
    });
  }

  remove(section: string, name: string, p: Principal): Promise<void> {
    return this.serial(async () => {
      const resource = this.requireSection(section, p);
      if (reaches(p, name)) this.refuseTenantConfig(section, name);
      const existing = reaches(p, name) ? this.currentEntry(section, name) : undefined;
      if (!existing) throw new SvcError('NOT_FOUND', notFound(section)(name));
      await this.commit([{ section, name, action: 'delete' }], p.who, 'delete', { changed: changedFields(resource, existing, undefined) });
    });
  }

  /** Drops the admin edit of a resource: the config file's version (or none) applies again. */
  removeOverride(section: string, name: string, p: Principal): Promise<void> {
    return this.serial(async () => {
      if (!reaches(p, name) || this.section(section, p) === undefined || !this.records.has(keyOf(section, name))) throw new SvcError('NOT_FOUND', `No admin override of ${section} '${name}'`);
      await this.commit([{ section, name, action: 'unoverride' }], p.who, 'remove-override');
    });
  }

  /** The sections in the config file's shape (export): a tenant's administrator gets its own entries. */
  exportable(p: Principal): { sections: ResourceSection[]; raw: RawConfig } {
    const raw = this.kernel.rawConfig();
    if (p.tenant === undefined) return { sections: this.catalogue(), raw };
    const mine: RawConfig = {};
    // Entries of the tenant's own config are in that config (its file), not in what the admin API imports.
    for (const s of this.catalogue(p)) mine[s.name] = this.list(s.name, p).filter((v) => v.source !== 'tenant_config').map((v) => this.currentEntry(s.name, v.name));
    return { sections: this.catalogue(p), raw: mine };
  }

  /** Every entry of every section, created or replaced by name, checked whole: all or nothing. */
  importSections(data: Record<string, Entry[]>, p: Principal): Promise<{ created: number; replaced: number }> {
    return this.serial(async () => {
      const issues: ResourceIssue[] = [];
      const changes: Change[] = [];
      let created = 0;
      for (const [sectionName, entries] of Object.entries(data)) {
        const section = this.section(sectionName, p);
        if (!section) {
          issues.push({ path: [sectionName], message: 'not a section of named entries the admin API manages' });
          continue;
        }
        entries.forEach((written, i) => {
          const entry = this.scoped(p, sectionName, written);
          const name = nameOf(entry);
          if (name === undefined) return void issues.push({ path: [sectionName, i, 'name'], message: 'required' });
          const origin = this.tenantOrigin(sectionName, name);
          if (origin !== undefined) return void issues.push({ path: [sectionName, i, 'name'], message: `'${name}' is written in ${origin}: change it there` });
          const existing = this.currentEntry(sectionName, name);
          if (!existing) created++;
          changes.push({ section: sectionName, name, action: 'upsert', entry: withKeptSecrets(section, entry, existing) });
        });
      }
      if (issues.length) throw new IssuesError('INVALID_INPUT', 'Nothing was imported', issues);
      await this.commit(changes, p.who, 'import');
      return { created, replaced: changes.length - created };
    });
  }

  private currentEntry(section: string, name: string): Entry | undefined {
    const entries = this.kernel.rawConfig()[section];
    return (Array.isArray(entries) ? entries : []).find((e) => nameOf(e) === name) as Entry | undefined;
  }

  private async commit(changes: Change[], actor: string, action: string, detail?: Record<string, unknown>): Promise<void> {
    const now = this.kernel.clock.now();
    const next: Records = new Map(this.records);
    for (const c of changes) {
      const key = keyOf(c.section, c.name);
      if (c.action === 'unoverride') next.delete(key);
      else if (c.action === 'delete' && next.get(key)?.action === 'upsert' && !this.fileHas(c.section, c.name)) next.delete(key);
      else next.set(key, { section: c.section, name: c.name, action: c.action, entry: c.action === 'upsert' ? c.entry : undefined, updatedAt: now, updatedBy: actor });
    }
    const check = this.kernel.proposeConfig(adminLayer(next));
    if (!check.ok) throw new IssuesError('INVALID_INPUT', 'The config with this change does not validate; nothing changed', this.locate(check.issues, next));
    const previous = this.records;
    await this.persist(changes, next, now, actor, action, detail);
    this.records = next;
    const applied = await this.kernel.reapplyConfig('admin API');
    if (!applied.ok) {
      this.records = previous;
      await this.persist(changes, previous, now, actor, `${action} (reverted)`, undefined);
      await this.kernel.reapplyConfig('admin API (revert)');
      // A node that read the rows meanwhile (a reconnect) reads them again.
      await this.kernel.store.notify(OVERRIDES_CHANGED);
      throw new IssuesError('INVALID_INPUT', 'The change failed to apply and was reverted', this.locate(applied.issues, next));
    }
    await this.kernel.store.notify(OVERRIDES_CHANGED);
  }

  /** Whether the config file itself has the entry. */
  private fileHas(section: string, name: string): boolean {
    this.kernel.rawConfig(); // brings `underlying` up to date
    const entries = this.underlying[section];
    return Array.isArray(entries) && entries.some((e) => nameOf(e) === name);
  }

  /** Writes the records of the changed resources as they are in `records`, and their write-only values to the vault. */
  private async persist(changes: Change[], records: Records, now: number, actor: string, action: string, detail: Record<string, unknown> | undefined): Promise<void> {
    const vault = this.vault();
    for (const c of changes) {
      const section = this.section(c.section);
      const record = records.get(keyOf(c.section, c.name));
      for (const key of section?.writeOnly ?? []) {
        const value = record?.action === 'upsert' ? record.entry?.[key] : undefined;
        if (typeof value === 'string') await vault.put(VAULT_OWNER, vaultName(c.section, c.name, key), value);
        else await vault.delete(VAULT_OWNER, vaultName(c.section, c.name, key));
      }
    }
    await this.kernel.store.transaction(
      async (tx) => {
        for (const c of changes) {
          const record = records.get(keyOf(c.section, c.name));
          if (!record) await deleteOverride(tx, c.section, c.name);
          else await writeOverride(tx, { ...record, entry: record.entry && withoutKeys(record.entry, this.section(c.section)?.writeOnly ?? []) });
          await writeAudit(tx, { at: now, actor, tenant: tenantOf(c.name), action, section: c.section, name: c.name, detail });
        }
      },
      { durable: true },
    );
  }

  /** Issues with the resource each falls in (`channel_rest[3].security` → channel_rest 'orders', field security). */
  private locate(issues: ConfigIssue[], records: Records): ResourceIssue[] {
    const raw = adminLayer(records).apply(this.underlying);
    return issues.map((issue) => {
      const [section, index, ...field] = issue.path;
      if (typeof section !== 'string' || typeof index !== 'number') return issue;
      const entries = raw[section];
      const name = Array.isArray(entries) ? nameOf(entries[index]) : undefined;
      return name === undefined ? issue : { ...issue, section, name, field };
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/** The records as compared across reloads: write-only values included. */
function fingerprint(records: Records): string {
  return JSON.stringify([...records.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function withKeptSecrets(section: ResourceSection, entry: Entry, existing: Entry | undefined): Entry {
  const out: Entry = { ...entry };
  for (const key of section.writeOnly) {
    if (out[key] === null) delete out[key];
    else if (!(key in out) && existing?.[key] !== undefined) out[key] = existing[key];
  }
  return out;
}

function withoutKeys(entry: Entry, keys: readonly string[]): Entry {
  const out: Entry = {};
  for (const [k, v] of Object.entries(entry)) if (!keys.includes(k)) out[k] = v;
  return out;
}

const notFound = (section: string) => (name: string) => `No ${section} entry named '${name}'`;

/** What an edit changed, field by field, before and after: write-only fields (secrets) left out, their change is `secretsChanged`. */
export function changedFields(section: Pick<ResourceSection, 'writeOnly'>, before: Entry | undefined, after: Entry | undefined): Record<string, { before?: unknown; after?: unknown }> {
  const out: Record<string, { before?: unknown; after?: unknown }> = {};
  for (const key of new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])) {
    if (section.writeOnly.includes(key)) continue;
    const was = before?.[key];
    const now = after?.[key];
    if (JSON.stringify(was) === JSON.stringify(now)) continue;
    out[key] = { ...(was !== undefined && { before: auditValue(was) }), ...(now !== undefined && { after: auditValue(now) }) };
  }
  return out;
}
