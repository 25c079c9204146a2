import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import { authenticator } from '../shared/authenticator.ts';
import { CredentialBook, scopeOf, type Presented } from '../shared/credential-book.ts';
import { secdefCommand, secdefControl, type SecdefSpec } from '../shared/secdef-cli.ts';
import { storedSecretsOf } from '../shared/secret-store.ts';
import { headerCredential } from '../shared/outgoing-header.ts';
import { definitionSecurity } from '../shared/openapi.ts';
import { SecretManager } from '../shared/secret-manager.ts';
import { apiKeyProblem } from '../shared/secret-rules.ts';
import { bookVerifier, VERIFIER_CAPABILITY, type CredentialVerifier } from '../shared/verifier.ts';
import { APIKEY, APIKEY_HEADER, apiKeyEntries, apiKeyShape } from './schema.ts';

const SECDEF: SecdefSpec = {
  type: APIKEY,
  subcommand: 'set-key',
  configField: 'key',
  secretWord: 'key',
  problem: apiKeyProblem,
};

interface ApiKeyState {
  manager: SecretManager;
  verifier: CredentialVerifier;
}

/** Several X-API-Key headers arrive as an array (or joined by commas, which keys never contain). */
function apiKeyToken(header: string | string[] | undefined): string | null | undefined {
  if (header === undefined) return undefined;
  return typeof header === 'string' ? header : null;
}

function parseApiKey(token: string): Presented | undefined {
  return apiKeyProblem(token) === undefined ? { secret: token } : undefined;
}

/** API keys on channels: `security[]` entries of type apikey, sent in X-API-Key. See README.md. */
export default definePlugin<Record<string, never>, ApiKeyState>({
  name: 'apikey',
  kind: 'security',
  version: '1.0.0',
  sdk: '^1.0.0',
  provides: ['security.verifier.apikey', 'security.outgoing.apikey'],
  configSchema: z.object({}).strict().default({}),
  contributes: {
    logRedact: ['headers["x-api-key"]', '*["x-api-key"]'],
    securityTypes: { [APIKEY]: apiKeyShape },
    storedSecrets: [storedSecretsOf(SECDEF.type, SECDEF.configField)],
    channelOpenApi: { security: definitionSecurity(APIKEY, (e) => ({ type: 'apiKey', in: 'header', name: 'X-API-Key', description: `The key of security definition '${e.name}', unmodified.` })) },
  },
  setup(kernel) {
    const book = new CredentialBook({ type: APIKEY, parse: parseApiKey });
    const manager = new SecretManager(kernel, book, SECDEF.secretWord, `svc secdef ${SECDEF.subcommand}`);
    manager.followChanges();
    const verifier = bookVerifier(book, { type: APIKEY, header: APIKEY_HEADER, challenge: undefined, token: apiKeyToken });
    kernel.provide(VERIFIER_CAPABILITY.apikey, verifier);
    // Spec, Authentication 7: the key goes unmodified in X-API-Key.
    kernel.provide('security.outgoing.apikey', headerCredential('key', APIKEY_HEADER, (_d, key) => key));
    kernel.addControl(secdefControl(SECDEF, manager));
    return { manager, verifier };
  },
  onConfig: (state, config) => state.manager.apply(apiKeyEntries(config).map((e) => ({ name: e.name, secret: e.key }))),
  hooks: {
    authenticate: ({ channel, config, state }) => {
      const entry = config.security.find((s) => s.name === channel.security && s.type === APIKEY);
      if (entry === undefined) return undefined;
      return authenticator([{ verifier: state.verifier, scope: scopeOf([entry.name]) }]);
    },
  },
  cli: [secdefCommand(SECDEF)],
});
