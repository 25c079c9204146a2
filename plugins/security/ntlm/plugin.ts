import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import { OUTGOING_AUTH_CAPABILITY, type OutgoingAuthFactory } from '../../capabilities.ts';
import { NtlmAuthorizer } from './authorizer.ts';
import { identityOf, NTLM, ntlmDefinitionSchema, ntlmShape, validateNtlm } from './schema.ts';

/**
 * NTLM (v2) on outgoing connections: `security[]` entries of type ntlm, for calling APIs behind
 * Windows / Active Directory authentication. Not usable on channels. See README.md.
 */
export default definePlugin<Record<string, never>, undefined>({
  name: 'ntlm',
  kind: 'security',
  version: '1.0.0',
  sdk: '^1.0.0',
  provides: [OUTGOING_AUTH_CAPABILITY.ntlm],
  configSchema: z.object({}).strict().default({}),
  contributes: {
    securityTypes: { [NTLM]: ntlmShape },
    validateConfig: validateNtlm,
    // The AUTHENTICATE message holds an NTLMv2 response, which can be attacked offline for the password.
    logRedact: ['headers.authorization', '*.authorization'],
  },
  setup(kernel) {
    const factory: OutgoingAuthFactory = (entry) => {
      const definition = ntlmDefinitionSchema.parse(entry);
      return new NtlmAuthorizer(identityOf(definition), definition.password, () => kernel.clock.now());
    };
    kernel.provide(OUTGOING_AUTH_CAPABILITY.ntlm, factory);
    return undefined;
  },
  hooks: {},
});
