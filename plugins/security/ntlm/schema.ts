import { z } from 'zod';
import type { ConfigIssue, SvcConfig } from '../../../sdk/plugin/index.ts';
import { channelsNamingType } from '../shared/outgoing-only.ts';
import { asRefinement, MAX_USERNAME_LENGTH, passwordProblem } from '../shared/secret-rules.ts';
import type { Identity } from './messages.ts';

export const NTLM = 'ntlm';

const CONTROL = /[\u0000-\u001f\u007f]/;
const NAME_MAX = MAX_USERNAME_LENGTH;

function nameProblem(value: string): string | undefined {
  if (value.length === 0) return 'must not be empty';
  if (value.length > NAME_MAX) return `must be at most ${NAME_MAX} characters`;
  if (CONTROL.test(value)) return 'must not contain control characters';
  return undefined;
}

function usernameProblem(username: string): string | undefined {
  const problem = nameProblem(username);
  if (problem !== undefined) return problem;
  const slash = username.indexOf('\\');
  if (slash !== -1 && (slash === 0 || slash === username.length - 1 || username.indexOf('\\', slash + 1) !== -1)) {
    return 'must be `user`, `DOMAIN\\user` or `user@domain`';
  }
  return undefined;
}

/** Keys of a `security[]` entry with `type: ntlm` (name and type come from the kernel). */
export const ntlmShape = {
  username: z
    .string()
    .superRefine(asRefinement(usernameProblem))
    .describe(
      'Windows account: `DOMAIN\\user` (NetBIOS domain), `user@domain.example` (UPN, sent whole with an empty domain), ' +
        'or `user` with `domain`.',
    ),
  password: z
    .string()
    .superRefine(asRefinement(passwordProblem))
    .describe('The account password; write `${ENV_NAME}` to keep it out of the file. Used to compute NTLMv2 responses, never sent or logged.')
    .meta({ writeOnly: true }),
  domain: z
    .string()
    .superRefine(asRefinement(nameProblem))
    .optional()
    .describe('Domain of a plain `username` (as the account\'s domain is spelt: NTLMv2 responses depend on its case). Not with `DOMAIN\\user` or a UPN.'),
  workstation: z
    .string()
    .superRefine(asRefinement(nameProblem))
    .optional()
    .describe('Workstation name reported to the server (some servers log it). Default: none.'),
};

/** A definition as the capability receives it: other security fields (rate_limiting) are dropped. */
export const ntlmDefinitionSchema = z.object({ name: z.string().min(1), type: z.literal(NTLM), ...ntlmShape });
export type NtlmDefinition = z.infer<typeof ntlmDefinitionSchema>;

/** Who the definition authenticates as, from the username forms the README lists. */
export function identityOf(def: Pick<NtlmDefinition, 'username' | 'domain' | 'workstation'>): Identity {
  const workstation = def.workstation ?? '';
  const slash = def.username.indexOf('\\');
  if (slash !== -1) return { domain: def.username.slice(0, slash), user: def.username.slice(slash + 1), workstation };
  // A UPN carries its domain: MS-NLMP sends it as the user name with an empty domain.
  if (def.username.includes('@')) return { domain: '', user: def.username, workstation };
  return { domain: def.domain ?? '', user: def.username, workstation };
}

/**
 * NTLM authenticates outgoing connections only (spec: not usable on channels). A domain given
 * twice, in `username` and `domain`, is refused rather than one of them silently winning.
 */
export function validateNtlm(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  config.security.forEach((entry, index) => {
    if (entry.type !== NTLM) return;
    const def = entry as NtlmDefinition;
    if (def.domain !== undefined && (def.username.includes('\\') || def.username.includes('@'))) {
      issues.push({ path: ['security', index, 'domain'], message: 'the username already names the domain (`DOMAIN\\user` or `user@domain`): remove one' });
    }
  });
  issues.push(...channelsNamingType(config, NTLM, 'NTLM authenticates outgoing connections only, not channels'));
  return issues;
}
