import type { Logger } from 'pino';
import type { FileFolder, FolderEntry } from '../../capabilities.ts';
import { printable } from './local-folder.ts';
import { globToRegExp, type ChannelFileEntry } from './schema.ts';

/** A file found by a poll: its path relative to the source folder, `/`-separated. */
export interface Found {
  path: string;
  name: string;
  size: number;
  mtimeMs: number;
}

/**
 * Lists a channel's folder and says which files are ready to be taken: matching the pattern,
 * with a safe name, no symlink, and finished being written (stable across polls, or marked).
 * What a poll saw is kept for the next one (the stability check); warnings about a name or a
 * symlink are logged once per file, not at every poll.
 */
export class Listing {
  private readonly patterns: RegExp[];
  private readonly skipDirs: Set<string>;
  /** path → how many polls in a row saw it at this size and mtime. */
  private seen = new Map<string, { size: number; mtimeMs: number; polls: number }>();
  private readonly warned = new Set<string>();

  constructor(
    private readonly entry: ChannelFileEntry,
    private readonly log: Logger,
  ) {
    this.patterns = (Array.isArray(entry.pattern) ? entry.pattern : [entry.pattern]).map(globToRegExp);
    this.skipDirs = new Set([entry.done_folder, entry.error_folder].map((f) => f.replace(/^\.?\/+|\/+$/g, '')));
  }

  /** The files ready now, oldest first. */
  async ready(folder: FileFolder): Promise<Found[]> {
    const files: Found[] = [];
    const names = new Set<string>();
    await this.walk(folder, '', files, names);
    const next = new Map<string, { size: number; mtimeMs: number; polls: number }>();
    const out: Found[] = [];
    const { polls, marker } = this.entry.stable;
    for (const f of files) {
      const before = this.seen.get(f.path);
      const count = before && before.size === f.size && before.mtimeMs === f.mtimeMs ? before.polls + 1 : 1;
      next.set(f.path, { size: f.size, mtimeMs: f.mtimeMs, polls: count });
      if (marker !== undefined ? names.has(f.path + marker) : count >= (polls ?? 2)) out.push(f);
    }
    this.seen = next;
    return out.sort((a, b) => a.mtimeMs - b.mtimeMs || (a.path < b.path ? -1 : 1));
  }

  private async walk(folder: FileFolder, dir: string, files: Found[], names: Set<string>): Promise<void> {
    const entries = await folder.list(dir);
    for (const e of entries) {
      const path = dir ? `${dir}/${e.name}` : e.name;
      names.add(path);
      if (!this.safeName(e, path)) continue;
      if (e.type === 'dir') {
        if (this.entry.recursive && !(dir === '' && this.skipDirs.has(e.name)) && !this.skipDirs.has(path)) await this.walk(folder, path, files, names);
        continue;
      }
      if (!this.matches(e.name)) continue;
      if (e.type === 'symlink') {
        this.warnOnce(path, `file pickup: '${printable(path)}' is a symlink: not followed, left alone`);
        continue;
      }
      if (e.type !== 'file') continue;
      if (this.entry.stable.marker !== undefined && e.name.endsWith(this.entry.stable.marker)) continue;
      files.push({ path, name: e.name, size: e.size, mtimeMs: e.mtimeMs });
    }
  }

  private matches(name: string): boolean {
    return this.patterns.some((p) => p.test(name));
  }

  /** Names a listing may hold that no path of ours may: `..` in them, separators, control characters. */
  private safeName(e: FolderEntry, path: string): boolean {
    if (e.name === '.' || e.name === '..') return false;
    if (!e.name.includes('..') && !/[/\\\u0000-\u001f\u007f]/.test(e.name)) return true;
    this.warnOnce(path, `file pickup: the name '${printable(path)}' is refused (.., a separator or a control character in it): left alone`);
    return false;
  }

  private warnOnce(path: string, message: string): void {
    if (this.warned.has(path)) return;
    if (this.warned.size > 10_000) this.warned.clear();
    this.warned.add(path);
    this.log.warn({ channel: this.entry.name }, message);
  }
}
