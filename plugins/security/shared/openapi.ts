import type { ChannelOpenApi, SecurityEntry } from '../../../sdk/plugin/index.ts';

/**
 * A security type's part in the channels' OpenAPI document: a channel whose `security` names a
 * definition of this type is protected by one scheme, named after the definition.
 */
export function definitionSecurity(type: string, scheme: (entry: SecurityEntry) => Record<string, unknown>): ChannelOpenApi['security'] {
  return (target, config) => {
    const entry = config.security.find((s) => s.name === target && s.type === type);
    return entry ? { [entry.name]: scheme(entry) } : undefined;
  };
}
