import type { SvcConfig } from '../../../kernel/config/schema.ts';
import { readSource, validate } from '../../../kernel/config/store.ts';
import type { Plugin } from '../../../kernel/plugin.ts';
import jsonPlugin from '../../../plugins/formats/json/plugin.ts';
import apiKeyPlugin from '../../../plugins/security/apikey/plugin.ts';
import basicAuthPlugin from '../../../plugins/security/basic-auth/plugin.ts';
import bearerTokenPlugin from '../../../plugins/security/bearer-token/plugin.ts';
import groupsPlugin from '../../../plugins/security/groups/plugin.ts';

/** bearer_token is the outgoing-only type: no channel or group may name one. */
const PLUGINS: Plugin[] = [jsonPlugin, basicAuthPlugin, apiKeyPlugin, groupsPlugin, bearerTokenPlugin];

/** Validates YAML exactly as the kernel does, with the security plugins loaded. */
export function parseConfig(yaml: string, env: NodeJS.ProcessEnv = {}): SvcConfig {
  return validate(readSource(yaml, env), PLUGINS, {});
}
