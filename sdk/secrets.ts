import { callHost } from './internal/runtime.ts';
import { checkSignature, wireData, type Data } from './crypto.ts';

export type HmacAlgorithm = 'sha256' | 'sha1';
export type SignatureEncoding = 'hex' | 'base64';

export interface SignedHeaderOptions {
  /** Header name, e.g. `X-Hub-Signature-256`. */
  header: string;
  /** What is signed: the body, or what the scheme says (Stripe: `${timestamp}.${body}`). */
  data: Data;
  /** Written before the signature, e.g. `sha256=` or `t=${timestamp},v1=`. Default: none. */
  prefix?: string;
  /** Default `sha256`. */
  algorithm?: HmacAlgorithm;
  /** Default `hex`. */
  encoding?: SignatureEncoding;
}

/**
 * A secret of the server's config (`secrets:`), used by name: the host signs and verifies with
 * it, and the value never enters the service. The config lists which services may use it.
 * Errors: NotFound (no such secret), Forbidden (not granted to this service),
 * ServiceUnavailable (no value set yet). Data is at most 8 MiB.
 */
export interface NamedSecret {
  readonly name: string;
  hmacSha256Hex(data: Data): Promise<string>;
  hmacSha256Base64(data: Data): Promise<string>;
  hmacSha1Hex(data: Data): Promise<string>;
  hmacSha1Base64(data: Data): Promise<string>;
  /** True when `signature` is the HMAC of data under the secret; timing-safe, on the host. */
  verifyHmacSha256Hex(data: Data, signature: string): Promise<boolean>;
  verifyHmacSha256Base64(data: Data, signature: string): Promise<boolean>;
  verifyHmacSha1Hex(data: Data, signature: string): Promise<boolean>;
  verifyHmacSha1Base64(data: Data, signature: string): Promise<boolean>;
  /**
   * `{ [header]: prefix + signature }`, to pass as headers of an outgoing call, e.g.
   * `await secret('partner').signedHeader({ header: 'X-Signature', prefix: 'sha256=', data: body })`.
   */
  signedHeader(options: SignedHeaderOptions): Promise<Record<string, string>>;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_TEXT = /^[\t\x20-\x7e]*$/;

class SecretHandle implements NamedSecret {
  constructor(readonly name: string) {}

  private async sign(fn: string, algorithm: unknown, encoding: unknown, data: Data): Promise<string> {
    return (await callHost('secrets.hmac', { name: this.name, algorithm, encoding, data: wireData(fn, data) })) as string;
  }

  private async verify(fn: string, algorithm: HmacAlgorithm, encoding: SignatureEncoding, data: Data, signature: string): Promise<boolean> {
    checkSignature(fn, signature);
    return (await callHost('secrets.verifyHmac', { name: this.name, algorithm, encoding, data: wireData(fn, data), signature })) as boolean;
  }

  hmacSha256Hex(data: Data): Promise<string> {
    return this.sign('hmacSha256Hex', 'sha256', 'hex', data);
  }
  hmacSha256Base64(data: Data): Promise<string> {
    return this.sign('hmacSha256Base64', 'sha256', 'base64', data);
  }
  hmacSha1Hex(data: Data): Promise<string> {
    return this.sign('hmacSha1Hex', 'sha1', 'hex', data);
  }
  hmacSha1Base64(data: Data): Promise<string> {
    return this.sign('hmacSha1Base64', 'sha1', 'base64', data);
  }
  verifyHmacSha256Hex(data: Data, signature: string): Promise<boolean> {
    return this.verify('verifyHmacSha256Hex', 'sha256', 'hex', data, signature);
  }
  verifyHmacSha256Base64(data: Data, signature: string): Promise<boolean> {
    return this.verify('verifyHmacSha256Base64', 'sha256', 'base64', data, signature);
  }
  verifyHmacSha1Hex(data: Data, signature: string): Promise<boolean> {
    return this.verify('verifyHmacSha1Hex', 'sha1', 'hex', data, signature);
  }
  verifyHmacSha1Base64(data: Data, signature: string): Promise<boolean> {
    return this.verify('verifyHmacSha1Base64', 'sha1', 'base64', data, signature);
  }

  async signedHeader(options: SignedHeaderOptions): Promise<Record<string, string>> {
    const { header, prefix = '', algorithm = 'sha256', encoding = 'hex' } = options ?? ({} as SignedHeaderOptions);
    if (typeof header !== 'string' || !HEADER_NAME.test(header)) throw new TypeError('signedHeader: header must be a header name');
    if (typeof prefix !== 'string' || !HEADER_TEXT.test(prefix)) throw new TypeError('signedHeader: prefix must be printable ASCII');
    return { [header]: prefix + (await this.sign('signedHeader', algorithm, encoding, options.data)) };
  }
}

/** A named secret of the config, for signing and verifying on the host: `secret('github-webhook')`. */
export function secret(name: string): NamedSecret {
  if (typeof name !== 'string' || name === '') throw new TypeError('secret: name must be a non-empty string');
  return new SecretHandle(name);
}
