import { z } from 'zod';
import type { ConfigIssue } from '../../../sdk/plugin/index.ts';
import type { SvcConfig } from '../../../sdk/plugin/index.ts';
import { asRefinement, passwordProblem, usernameProblem } from '../shared/secret-rules.ts';

export const BASIC_AUTH = 'basic_auth';

/** Keys of a `security[]` entry with `type: basic_auth` (name and type come from the kernel). */
export const basicAuthShape = {
  username: z.string().superRefine(asRefinement(usernameProblem)).describe('Username clients send with HTTP Basic Auth; unique among basic_auth definitions.'),
  password: z
    .string()
    .superRefine(asRefinement(passwordProblem))
    .optional()
    .describe(
      'Password; may be `${ENV_NAME}`. Absent: a random one is generated and stored (set it with `svc secdef set-password NAME`). ' +
        'A password set with the CLI stays until this value is edited.',
    )
    .meta({ writeOnly: true }),
};

export const basicAuthEntrySchema = z.object(basicAuthShape);
export type BasicAuthEntry = z.infer<typeof basicAuthEntrySchema> & { name: string; type: typeof BASIC_AUTH };

export function basicAuthEntries(config: SvcConfig): BasicAuthEntry[] {
  return config.security.filter((s) => s.type === BASIC_AUTH) as BasicAuthEntry[];
}

/** A username identifies the client (pub/sub, groups): two definitions must not share one. */
export function validateBasicAuth(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, string>();
  config.security.forEach((entry, index) => {
    if (entry.type !== BASIC_AUTH) return;
    const username = (entry as BasicAuthEntry).username;
    const first = seen.get(username);
    if (first !== undefined) {
      issues.push({ path: ['security', index, 'username'], message: `username '${username}' is already used by basic_auth definition '${first}'` });
    } else {
      seen.set(username, entry.name);
    }
  });
  return issues;
}
