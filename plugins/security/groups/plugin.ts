import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import { authenticator, type AcceptedCredential } from '../shared/authenticator.ts';
import { scopeOf } from '../shared/credential-book.ts';
import { MEMBER_TYPES, VERIFIER_CAPABILITY } from '../shared/verifier.ts';
import { groupsOf, groupsSectionSchema, membersByType, validateGroups } from './schema.ts';

/**
 * Groups of client definitions on channels. A group channel accepts the credentials of any
 * member; the hook is rebuilt with every config, so a removed member is refused at once.
 * Verification itself belongs to the member types' plugins (capabilities in shared/verifier.ts).
 */
export default definePlugin<Record<string, never>, undefined>({
  name: 'groups',
  kind: 'security',
  version: '1.0.0',
  sdk: '^1.0.0',
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { groups: groupsSectionSchema },
    securityTargets: (config) => groupsOf(config).map((g) => g.name),
    validateConfig: validateGroups,
    channelOpenApi: {
      // A group channel accepts any member's credentials: each member's scheme is an alternative.
      security: (target, config, resolve) => {
        const group = groupsOf(config).find((g) => g.name === target);
        return group && Object.assign({}, ...group.members.map((m) => resolve(m) ?? {}));
      },
    },
  },
  hooks: {
    authenticate: ({ channel, config, kernel }) => {
      const group = groupsOf(config).find((g) => g.name === channel.security);
      if (group === undefined) return undefined;
      const byType = membersByType(group, config);
      const accepted: AcceptedCredential[] = [];
      for (const type of MEMBER_TYPES) {
        const names = byType.get(type);
        if (names === undefined) continue;
        const verifier = kernel.lookup(VERIFIER_CAPABILITY[type]);
        if (verifier === undefined) {
          kernel.log.warn({ group: group.name, type }, 'group has members of a security type whose plugin is not loaded; they cannot authenticate');
          continue;
        }
        accepted.push({ verifier, scope: scopeOf(names) });
      }
      return authenticator(accepted, group.name);
    },
  },
});
