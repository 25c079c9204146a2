import { ConfigError, readSource, validate } from '../../kernel/config/store.ts';
import type { SvcConfig } from '../../kernel/config/schema.ts';
import type { Plugin } from '../../kernel/plugin.ts';

/** A config (YAML) validated with these plugins enabled; files it names (tenants' config_file) are relative to `dir`. */
export function validConfig(yaml: string, plugins: readonly Plugin[], dir?: string): SvcConfig {
  return validate(readSource(yaml, {}), [...plugins], {}, dir);
}

/** The issues a config (YAML) has with these plugins enabled, as `svc check` lists them; [] when valid. */
export function configIssues(yaml: string, plugins: readonly Plugin[], dir?: string): string[] {
  try {
    validConfig(yaml, plugins, dir);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  return [];
}
