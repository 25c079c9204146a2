import type { AuthInfo, Exchange } from '../../../sdk/plugin/index.ts';
import { SvcError } from '../../../sdk/plugin/index.ts';
import type { HookFn } from '../../../sdk/plugin/index.ts';
import type { Scope, SecretRecord } from './credential-book.ts';
import type { CredentialVerifier } from './verifier.ts';

declare module '../../../sdk/plugin/extensions.ts' {
  interface AuthInfo {
    /** The group through which access was granted, when the channel names a group. */
    group?: string;
  }
}

/** One credential type a channel accepts, limited to the definitions it may match. */
export interface AcceptedCredential {
  verifier: CredentialVerifier;
  scope: Scope;
}

/**
 * The authenticate step of a secured channel. Accepts exactly one credential among the
 * accepted types; none, several, malformed or wrong ones are all the same 401 (the reason
 * goes to the debug log). Synchronous when the credential is in the verified cache.
 * With `group`, ex.auth also names the group the access came through.
 */
export function authenticator(accepted: readonly AcceptedCredential[], group?: string): HookFn {
  const challenge = mergeChallenges(accepted);
  const groupAuth = new WeakMap<SecretRecord, AuthInfo>();
  const authOf = (record: SecretRecord): AuthInfo => {
    if (group === undefined) return record.auth;
    let auth = groupAuth.get(record);
    if (auth === undefined) {
      auth = Object.freeze({ ...record.auth, group });
      groupAuth.set(record, auth);
    }
    return auth;
  };
  const reject = (ex: Exchange, reason: string): SvcError => {
    ex.log.debug({ channel: ex.channel.name, security: ex.channel.security, reason }, 'authentication failed');
    return new SvcError('UNAUTHORIZED', undefined, { headers: challenge && { ...challenge } });
  };
  const settle = (ex: Exchange, record: SecretRecord | undefined, header: string): void => {
    if (record === undefined) throw reject(ex, 'invalid credentials');
    ex.auth = authOf(record);
    // The service learns who called (ctx.user), never the secret itself.
    ex.hideHeader(header);
  };

  return function authenticate(ex: Exchange): void | Promise<void> {
    let chosen: AcceptedCredential | undefined;
    let token: string | undefined;
    for (let i = 0; i < accepted.length; i++) {
      const candidate = accepted[i]!;
      const found = candidate.verifier.token(ex.headers[candidate.verifier.header]);
      if (found === undefined) continue;
      if (found === null) throw reject(ex, `unusable ${candidate.verifier.header} header`);
      if (chosen !== undefined) throw reject(ex, 'several credentials');
      chosen = candidate;
      token = found;
    }
    if (chosen === undefined || token === undefined) throw reject(ex, 'no credentials');
    const header = chosen.verifier.header;
    const result = chosen.verifier.verify(token, chosen.scope);
    if (result instanceof Promise) return result.then((record) => settle(ex, record, header));
    settle(ex, result, header);
  };
}

function mergeChallenges(accepted: readonly AcceptedCredential[]): Record<string, string> | undefined {
  const headers: Record<string, string> = {};
  for (const { verifier } of accepted) Object.assign(headers, verifier.challenge);
  return Object.keys(headers).length === 0 ? undefined : headers;
}
