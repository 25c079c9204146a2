import { z } from 'zod';
import type { Capabilities } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import { authenticator } from '../shared/authenticator.ts';
import { BASIC_CHALLENGE } from '../shared/challenge.ts';
import { ANY_DEFINITION, CredentialBook, scopeOf } from '../shared/credential-book.ts';
import { secdefCommand, secdefControl, type SecdefSpec } from '../shared/secdef-cli.ts';
import { storedSecretsOf } from '../shared/secret-store.ts';
import { headerCredential } from '../shared/outgoing-header.ts';
import { definitionSecurity } from '../shared/openapi.ts';
import { SecretManager } from '../shared/secret-manager.ts';
import { asRefinement, passwordProblem, usernameProblem } from '../shared/secret-rules.ts';
import { bookVerifier, VERIFIER_CAPABILITY, type CredentialVerifier } from '../shared/verifier.ts';
import { basicToken, decodeBasic } from './basic-header.ts';
import { BASIC_AUTH, basicAuthEntries, basicAuthShape, validateBasicAuth } from './schema.ts';

const SECDEF: SecdefSpec = {
  type: BASIC_AUTH,
  subcommand: 'set-password',
  configField: 'password',
  secretWord: 'password',
  problem: passwordProblem,
};

/** What 'security.basic.register' accepts: the same rules as a configured definition. */
const registrationSchema = z
  .object({
    name: z.string().min(1),
    username: z.string().superRefine(asRefinement(usernameProblem)),
    lifetime: z.enum(['builtin', 'ephemeral']),
    password: z.string().superRefine(asRefinement(passwordProblem)).optional(),
  })
  .refine((r) => r.lifetime === 'builtin' || r.password !== undefined, 'an ephemeral definition needs a password');

interface BasicAuthState {
  manager: SecretManager;
  verifier: CredentialVerifier;
}

/** HTTP Basic Auth on channels: `security[]` entries of type basic_auth. See README.md. */
export default definePlugin<Record<string, never>, BasicAuthState>({
  name: 'basic-auth',
  kind: 'security',
  version: '1.0.0',
  sdk: '^1.0.0',
  provides: ['security.verifier.basic_auth', 'security.basic.authenticate', 'security.basic.register', 'security.outgoing.basic_auth'],
  configSchema: z.object({}).strict().default({}),
  contributes: {
    logRedact: ['headers.authorization', '*.authorization'],
    securityTypes: { [BASIC_AUTH]: basicAuthShape },
    validateConfig: validateBasicAuth,
    storedSecrets: [storedSecretsOf(SECDEF.type, SECDEF.configField)],
    channelOpenApi: { security: definitionSecurity(BASIC_AUTH, (e) => ({ type: 'http', scheme: 'basic', description: `Basic Auth: the credentials of security definition '${e.name}'.` })) },
  },
  setup(kernel) {
    const book = new CredentialBook({ type: BASIC_AUTH, parse: decodeBasic });
    const manager = new SecretManager(kernel, book, SECDEF.secretWord, `svc secdef ${SECDEF.subcommand}`);
    manager.followChanges();
    const verifier = bookVerifier(book, { type: BASIC_AUTH, header: 'authorization', challenge: BASIC_CHALLENGE, token: basicToken });
    kernel.provide(VERIFIER_CAPABILITY.basic_auth, verifier);
    const authenticateAny: Capabilities['security.basic.authenticate'] = (authorization) => {
      const token = basicToken(authorization);
      if (typeof token !== 'string') return undefined;
      const verified = verifier.verify(token, ANY_DEFINITION);
      return verified instanceof Promise ? verified.then((record) => record?.auth) : verified?.auth;
    };
    kernel.provide('security.basic.authenticate', authenticateAny);
    const register: Capabilities['security.basic.register'] = (definition) => manager.register(registrationSchema.parse(definition));
    kernel.provide('security.basic.register', register);
    kernel.addControl(secdefControl(SECDEF, manager));
    kernel.provide(
      'security.outgoing.basic_auth',
      headerCredential('password', 'authorization', (d, password) => `Basic ${Buffer.from(`${String(d.username)}:${password}`, 'utf8').toString('base64')}`),
    );
    return { manager, verifier };
  },
  onConfig: (state, config) =>
    state.manager.apply(basicAuthEntries(config).map((e) => ({ name: e.name, username: e.username, secret: e.password }))),
  hooks: {
    authenticate: ({ channel, config, state }) => {
      const entry = config.security.find((s) => s.name === channel.security && s.type === BASIC_AUTH);
      if (entry === undefined) return undefined;
      return authenticator([{ verifier: state.verifier, scope: scopeOf([entry.name]) }]);
    },
  },
  cli: [secdefCommand(SECDEF)],
});
