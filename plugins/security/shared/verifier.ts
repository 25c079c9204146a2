import '../../../sdk/plugin/capabilities.ts';
import type { CredentialBook, Scope, SecretRecord } from './credential-book.ts';

/**
 * How one security type finds and checks its credential in a request. The basic-auth and
 * apikey plugins provide theirs under these capability names, so the groups plugin can
 * authenticate members of either type without importing their internals.
 */
export const VERIFIER_CAPABILITY = {
  basic_auth: 'security.verifier.basic_auth',
  apikey: 'security.verifier.apikey',
} as const;

export type MemberType = keyof typeof VERIFIER_CAPABILITY;

declare module '../../../sdk/plugin/capabilities.ts' {
  interface Capabilities {
    /** Verifies one credential type (provided by that type's plugin, used by groups). */
    'security.verifier.basic_auth': CredentialVerifier;
    'security.verifier.apikey': CredentialVerifier;
  }
}
export const MEMBER_TYPES = Object.keys(VERIFIER_CAPABILITY) as MemberType[];

export interface CredentialVerifier {
  readonly type: MemberType;
  /** Lower-case name of the request header carrying the credential. */
  readonly header: string;
  /** Headers a 401 carries for this type (Basic's challenge), if any. */
  readonly challenge: Readonly<Record<string, string>> | undefined;
  /**
   * The credential token in the header value; undefined when no credential of this type is
   * presented, null when one is but it cannot be a single credential (several, malformed).
   */
  token(headerValue: string | string[] | undefined): string | null | undefined;
  /** The definition the token authenticates within scope; synchronous on a cache hit. */
  verify(token: string, scope: Scope): SecretRecord | undefined | Promise<SecretRecord | undefined>;
}

export function bookVerifier(
  book: CredentialBook,
  spec: Pick<CredentialVerifier, 'type' | 'header' | 'challenge' | 'token'>,
): CredentialVerifier {
  return {
    ...spec,
    verify: (token, scope) => book.authenticate(token, scope),
  };
}
