import { z } from 'zod';
import type { SvcConfig } from '../../../kernel/config/schema.ts';
import { readSource, validate } from '../../../kernel/config/store.ts';
import type { Plugin } from '../../../kernel/plugin.ts';
import jsonPlugin from '../../../plugins/formats/json/plugin.ts';
import apiKeyPlugin from '../../../plugins/security/apikey/plugin.ts';
import basicAuthPlugin from '../../../plugins/security/basic-auth/plugin.ts';
import groupsPlugin from '../../../plugins/security/groups/plugin.ts';

/** A security type no group may hold (outgoing-only types look like this to a group). */
const outgoingOnlyType: Plugin = {
  name: 'outgoing-only',
  kind: 'outgoing',
  version: '0.0.0', sdk: '^1.0.0',
  configSchema: z.object({}).default({}),
  contributes: { securityTypes: { bearer_token: { username: z.string() } } },
  hooks: {},
};

const PLUGINS: Plugin[] = [jsonPlugin, basicAuthPlugin, apiKeyPlugin, groupsPlugin, outgoingOnlyType];

/** Validates YAML exactly as the kernel does, with the security plugins loaded. */
export function parseConfig(yaml: string, env: NodeJS.ProcessEnv = {}): SvcConfig {
  return validate(readSource(yaml, env), PLUGINS, {});
}
