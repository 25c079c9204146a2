import { stringify } from 'yaml';
import type { RawConfig } from '../../../sdk/plugin/index.ts';
import { nameOf, type Entry } from './layer.ts';
import type { ResourceSection } from './catalogue.ts';

/**
 * `svc export`: the running config's resource sections in the config file's shape (so the
 * output is a valid svc.yaml, and an import file). Write-only values are never exported: each
 * becomes a `${VARIABLE}` reference, filled from the environment where the file is imported.
 */
export function exportConfig(raw: RawConfig, sections: readonly ResourceSection[]): { yaml: string; variables: string[] } {
  const out: Record<string, Entry[]> = {};
  const variables: string[] = [];
  for (const section of sections) {
    const entries = raw[section.name];
    if (!Array.isArray(entries) || entries.length === 0) continue;
    out[section.name] = entries.map((e) => {
      const entry: Entry = { ...(e as Entry) };
      for (const key of section.writeOnly) {
        if (entry[key] === undefined || entry[key] === null) continue;
        const variable = variableName(section.name, nameOf(entry) ?? '', key);
        entry[key] = `\${${variable}}`;
        variables.push(variable);
      }
      return entry;
    });
  }
  const header = [
    '# svc export: the running config (file and admin edits) in the config file shape.',
    '# Secrets are not exported; each is a ${VARIABLE} to set where this file is imported or used:',
    ...variables.map((v) => `#   ${v}`),
    '',
  ].join('\n');
  return { yaml: header + stringify(out, { lineWidth: 0 }), variables };
}

/** SVC_SECRET_<SECTION>_<NAME>_<KEY>, upper-case, other characters as `_`. */
export function variableName(section: string, name: string, key: string): string {
  return `SVC_SECRET_${section}_${name}_${key}`.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}
