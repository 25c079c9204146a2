import { createHmac, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { KernelApi } from '../../../sdk/plugin/index.ts';
import { definePlugin, SvcError, type SecurityEntry } from '../../../sdk/plugin/index.ts';
import { OUTGOING_AUTH_CAPABILITY, type OutgoingAuthContext, type OutgoingAuthorizer } from '../../capabilities.ts';
import {
  BEARER_TOKEN,
  bearerTokenDefinitionSchema,
  bearerTokenEntries,
  bearerTokenShape,
  scopeProblem,
  validateBearerToken,
  type BearerTokenDefinition,
} from './schema.ts';
import { TokenRequestCounts } from './stats.ts';
import { TokenCache, type TokenFetcher } from './token-cache.ts';
import { requestToken, TokenRequestError } from './token-request.ts';

interface BearerState {
  tokens: TokenCache;
  /** Keys definitions by their fields without keeping a plain hash of the secret around. */
  digestKey: Buffer;
  log: KernelApi['log'];
  /** Definitions already warned about (name and URL), so a reload does not repeat the warning. */
  plainHttpWarned: Set<string>;
  requests: TokenRequestCounts;
}

/** A definition's cache key: its name and a keyed digest of every field, so an edit means new tokens. */
function definitionKey(def: BearerTokenDefinition, digestKey: Buffer): string {
  const fields = [
    def.username,
    def.client_secret,
    def.auth_server_url,
    def.scopes,
    def.client_id_field,
    def.client_secret_field,
    def.grant_type,
    Object.entries(def.extra_fields).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    def.data_format,
    def.token_timeout_ms,
  ];
  return `${def.name}\n${createHmac('sha256', digestKey).update(JSON.stringify(fields)).digest('base64url')}`;
}

/** The call's auth_scopes replace the definition's; they come from service code, so they are checked. */
function scopesFor(def: BearerTokenDefinition, context: OutgoingAuthContext): readonly string[] {
  if (context.scopes === undefined) return def.scopes;
  for (const scope of context.scopes) {
    const problem = scopeProblem(scope);
    if (problem !== undefined) throw new SvcError('INVALID_INPUT', `auth_scopes: ${problem}`);
  }
  return context.scopes;
}

function fetcherFor(def: BearerTokenDefinition, kernel: KernelApi, cid: string, requests: TokenRequestCounts): TokenFetcher {
  const authServer = new URL(def.auth_server_url).origin;
  return async (scopes, signal) => {
    try {
      const token = await requestToken(def, scopes, signal);
      requests.add(def.name, 'ok');
      kernel.log.debug({ cid, security: def.name, auth_server: authServer, expires_in: token.expiresIn }, 'bearer token obtained');
      return token;
    } catch (err) {
      requests.add(def.name, signal.aborted ? 'cancelled' : 'failed');
      if (!(err instanceof TokenRequestError)) throw err;
      const fields = { cid, security: def.name, auth_server: authServer, status: err.status, oauth_error: err.oauthError, reason: err.reason };
      if (signal.aborted) kernel.log.debug(fields, 'bearer token request cancelled');
      else kernel.log.warn(fields, 'bearer token request failed');
      throw new SvcError('BAD_GATEWAY', `Token request of bearer_token definition '${def.name}' failed: ${err.reason}`, { cause: err });
    }
  };
}

function bearerAuthorizer(entry: SecurityEntry, kernel: KernelApi, state: BearerState): OutgoingAuthorizer {
  const def = bearerTokenDefinitionSchema.parse(entry);
  const key = definitionKey(def, state.digestKey);
  return {
    async authorize(request, context) {
      const fetch = fetcherFor(def, kernel, context.cid, state.requests);
      request.headers.authorization = await state.tokens.header(key, scopesFor(def, context), fetch, context.signal, context.waitMs);
    },
    refused(request, context) {
      state.tokens.refused(key, scopesFor(def, context), request.headers.authorization);
      return true;
    },
    async close() {
      state.tokens.forget(key);
    },
  };
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || hostname.startsWith('127.');
}

/**
 * OAuth 2.0 client credentials for outgoing connections: `security[]` entries of type
 * bearer_token, usable on outgoing connections only. See README.md.
 */
export default definePlugin<Record<string, never>, BearerState>({
  name: 'bearer-token',
  kind: 'security',
  version: '1.0.0',
  sdk: '^1.0.0',
  provides: [OUTGOING_AUTH_CAPABILITY.bearer_token, 'bearer-token.stats'],
  configSchema: z.object({}).strict().default({}),
  contributes: {
    securityTypes: { [BEARER_TOKEN]: bearerTokenShape },
    validateConfig: validateBearerToken,
    logRedact: ['client_secret', '*.client_secret', 'access_token', '*.access_token'],
  },
  setup(kernel) {
    const state: BearerState = { tokens: new TokenCache(kernel.clock), digestKey: randomBytes(32), log: kernel.log, plainHttpWarned: new Set(), requests: new TokenRequestCounts() };
    kernel.provide(OUTGOING_AUTH_CAPABILITY.bearer_token, (entry) => bearerAuthorizer(entry, kernel, state));
    kernel.provide('bearer-token.stats', () => state.requests.stats());
    return state;
  },
  onConfig(state, config) {
    const defs = bearerTokenEntries(config);
    state.tokens.retain(new Set(defs.map((def) => definitionKey(def, state.digestKey))));
    for (const def of defs) {
      const url = new URL(def.auth_server_url);
      const warning = `${def.name}\n${def.auth_server_url}`;
      if (url.protocol === 'http:' && !isLoopback(url.hostname) && !state.plainHttpWarned.has(warning)) {
        state.plainHttpWarned.add(warning);
        state.log.warn({ security: def.name }, 'bearer_token auth_server_url is plain http: the client secret and tokens cross the network unencrypted');
      }
    }
  },
  stop(state) {
    state.tokens.clear();
  },
  hooks: {},
});
