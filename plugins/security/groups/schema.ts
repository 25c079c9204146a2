import { z } from 'zod';
import { listColumn, securityNameSchema, scopedRef } from '../../../sdk/plugin/index.ts';
import type { SvcConfig } from '../../../sdk/plugin/index.ts';
import type { ConfigIssue } from '../../../sdk/plugin/index.ts';
import { MEMBER_TYPES, type MemberType } from '../shared/verifier.ts';

export const groupSchema = z
  .object({
    name: securityNameSchema.describe("Unique name; a channel's `security` may name it."),
    members: listColumn(z.array(scopedRef(z.string().min(1))), 1, 'Members')
      .default([])
      .describe('Names of basic_auth or apikey definitions whose clients may call channels of this group; removing one revokes it at once.'),
  })
  .strict();

export type Group = z.infer<typeof groupSchema>;

export const groupsSectionSchema = z.array(groupSchema).default([]).describe('Groups of client security definitions, assigned to channels by name.').meta({ title: 'Security groups' });

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    groups: Group[];
  }
}

export function groupsOf(config: SvcConfig): Group[] {
  return config.groups;
}

/** Member names of a group, by security type. Unknown members are skipped (validateGroups reports them). */
export function membersByType(group: Group, config: SvcConfig): Map<MemberType, string[]> {
  const types = new Map(config.security.map((s) => [s.name, s.type]));
  const byType = new Map<MemberType, string[]>();
  for (const member of group.members) {
    const type = types.get(member) as MemberType | undefined;
    if (type === undefined || !MEMBER_TYPES.includes(type)) continue;
    byType.set(type, [...(byType.get(type) ?? []), member]);
  }
  return byType;
}

export function validateGroups(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const types = new Map(config.security.map((s) => [s.name, s.type]));
  const names = new Set<string>();
  groupsOf(config).forEach((group, index) => {
    if (group.name === 'none') issues.push({ path: ['groups', index, 'name'], message: "'none' is reserved for channels without security" });
    if (types.has(group.name)) issues.push({ path: ['groups', index, 'name'], message: `'${group.name}' is also the name of a security definition` });
    if (names.has(group.name)) issues.push({ path: ['groups', index, 'name'], message: `duplicate group name '${group.name}'` });
    names.add(group.name);
    const members = new Set<string>();
    group.members.forEach((member, m) => {
      const path = ['groups', index, 'members', m];
      const type = types.get(member);
      if (type === undefined) issues.push({ path, message: `no security definition named '${member}'` });
      else if (!MEMBER_TYPES.includes(type as MemberType)) issues.push({ path, message: `'${member}' is a ${type} definition; members must be ${MEMBER_TYPES.join(' or ')}` });
      if (members.has(member)) issues.push({ path, message: `'${member}' is listed twice` });
      members.add(member);
    });
  });
  return issues;
}
