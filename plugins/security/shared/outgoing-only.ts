import type { ConfigIssue, SvcConfig } from '../../../sdk/plugin/index.ts';

/**
 * Issues for channels whose `security` names a definition of an outgoing-only type (NTLM, Bearer
 * token). No authenticate hook would claim such a channel, so it would be open; the config is
 * refused instead. Group members need no check here: the groups plugin accepts only basic_auth
 * and apikey.
 */
export function channelsNamingType(config: SvcConfig, type: string, why: string): ConfigIssue[] {
  const names = new Set(config.security.filter((s) => s.type === type).map((s) => s.name));
  const issues: ConfigIssue[] = [];
  config.channel_rest.forEach((channel, index) => {
    if (names.has(channel.security)) {
      issues.push({ path: ['channel_rest', index, 'security'], message: `'${channel.security}' is a ${type} definition: ${why}` });
    }
  });
  return issues;
}
