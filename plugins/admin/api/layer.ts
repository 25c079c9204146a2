import { isDeepStrictEqual } from 'node:util';
import type { ConfigLayer, RawConfig } from '../../../sdk/plugin/index.ts';
import type { OverrideRecord } from './store.ts';

export type Entry = Record<string, unknown>;
/** Records by `section\0name`; upserts hold the whole entry, write-only values included (in memory only). */
export type Records = Map<string, OverrideRecord>;

export const keyOf = (section: string, name: string) => `${section}\u0000${name}`;

export const LAYER_NAME = 'admin';

/**
 * The admin API's layer over the config file. Per resource the admin edit wins: an upsert takes
 * the place of the file's entry of that name (or is added after the file's entries), a delete
 * removes it, until the override is removed (docs/decisions/admin.md). When the file's version
 * of an overridden resource changes, a warning names it.
 */
export function adminLayer(records: Records, warn?: (section: string, name: string) => void, seenFile?: Map<string, unknown>): ConfigLayer {
  return {
    name: LAYER_NAME,
    apply(raw: RawConfig): RawConfig {
      const out: RawConfig = { ...raw };
      const bySection = new Map<string, OverrideRecord[]>();
      for (const r of records.values()) bySection.set(r.section, [...(bySection.get(r.section) ?? []), r]);
      for (const [section, list] of bySection) {
        const current = out[section];
        const entries: unknown[] = Array.isArray(current) ? [...(current as unknown[])] : [];
        for (const record of list) {
          const at = entries.findIndex((e) => nameOf(e) === record.name);
          if (at >= 0 && warn && seenFile) {
            const key = keyOf(section, record.name);
            if (!seenFile.has(key) || !isDeepStrictEqual(seenFile.get(key), entries[at])) warn(section, record.name);
            seenFile.set(key, entries[at]);
          }
          if (record.action === 'delete') {
            if (at >= 0) entries.splice(at, 1);
          } else if (at >= 0) entries[at] = record.entry;
          else entries.push(record.entry);
        }
        out[section] = entries;
      }
      return out;
    },
  };
}

export function nameOf(entry: unknown): string | undefined {
  if (entry === null || typeof entry !== 'object') return undefined;
  const name = (entry as Entry).name;
  return typeof name === 'string' ? name : undefined;
}
