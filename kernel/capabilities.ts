import type { AuthInfo } from './exchange.ts';

/**
 * Named capabilities plugins share through kernel.provide / kernel.lookup, so that
 * no plugin imports another plugin's internals. Names and shapes live here.
 */
export interface Capabilities {
  /**
   * Verifies an `Authorization: Basic ...` header against every basic_auth definition
   * (provided by the basic-auth plugin). Resolves the matched definition, or undefined.
   * Timing-safe, cached like channel authentication.
   */
  'security.basic.authenticate': (authorization: string | undefined) => Promise<AuthInfo | undefined>;
  /** The client address rules of the kernel (forwarded headers, trusted proxies), for plugins' own routes. */
}

export type CapabilityName = keyof Capabilities;
