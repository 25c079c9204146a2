import { describe, expect, it } from 'vitest';
import { canonicalAddress, checkTrustedProxies, clientAddressOf, trustedProxies } from '../../../kernel/http/client-address.ts';

describe('client address (spec: rate limiting item 6)', () => {
  it('takes the first non-empty of X-Svc-Forwarded-For, X-Forwarded-For (first address), then the peer', () => {
    expect(clientAddressOf({ 'x-svc-forwarded-for': '10.0.0.1', 'x-forwarded-for': '10.0.0.2' }, '127.0.0.1', undefined)).toBe('10.0.0.1');
    expect(clientAddressOf({ 'x-svc-forwarded-for': ' ', 'x-forwarded-for': '10.0.0.2, 10.0.0.3' }, '127.0.0.1', undefined)).toBe('10.0.0.2');
    expect(clientAddressOf({}, '127.0.0.1', undefined)).toBe('127.0.0.1');
    // The socket's own IPv4-mapped address is canonicalised like a forwarded one.
    expect(clientAddressOf({}, '::ffff:127.0.0.1', undefined)).toBe('127.0.0.1');
    expect(clientAddressOf({ 'x-forwarded-for': '10.0.0.2' }, '::ffff:192.0.2.1', trustedProxies(['127.0.0.0/8']))).toBe('192.0.2.1');
  });

  it('honours the headers only from trusted proxies', () => {
    const trusted = trustedProxies(['127.0.0.0/8', '::1']);
    expect(clientAddressOf({ 'x-forwarded-for': '10.0.0.2' }, '127.0.0.5', trusted)).toBe('10.0.0.2');
    expect(clientAddressOf({ 'x-forwarded-for': '10.0.0.2' }, '192.0.2.1', trusted)).toBe('192.0.2.1');
    expect(clientAddressOf({ 'x-forwarded-for': '10.0.0.2' }, '::ffff:127.0.0.1', trusted)).toBe('10.0.0.2');
  });

  it('canonicalises IPv4-mapped IPv6 and refuses bad proxy lists', () => {
    expect(canonicalAddress('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(canonicalAddress('::FFFF:192.0.2.7')).toBe('192.0.2.7');
    expect(canonicalAddress('not an address')).toBe('not an address');
    // Loose spellings are not rewritten into addresses: the rate-limit plugin refuses them.
    expect(canonicalAddress('0x0')).toBe('0x0');
    expect(canonicalAddress('010.1.2.3')).toBe('010.1.2.3');
    expect(canonicalAddress('::ffff:010.1.2.3')).toBe('::ffff:010.1.2.3');
    expect(canonicalAddress('::1.2.3.4')).toBe('::1.2.3.4');
    expect(checkTrustedProxies(['10.0.0.0/8', '::1'])).toBeUndefined();
    expect(checkTrustedProxies(['10.0.0.0/33'])).toMatch(/not an address or CIDR/);
  });
});
