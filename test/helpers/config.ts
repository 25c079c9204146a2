import { ConfigError, readSource, validate } from '../../kernel/config/store.ts';
import type { Plugin } from '../../kernel/plugin.ts';

/** The issues a config (YAML) has with these plugins enabled, as `svc check` lists them; [] when valid. */
export function configIssues(yaml: string, plugins: readonly Plugin[]): string[] {
  try {
    validate(readSource(yaml, {}), [...plugins], {});
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  return [];
}
