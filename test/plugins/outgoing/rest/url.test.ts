import { describe, expect, it } from 'vitest';
import { pathBuilder } from '../../../../plugins/outgoing/rest/url.ts';
import { backoffMs, retryAfterMs, safeToRepeat } from '../../../../plugins/outgoing/rest/retry.ts';

describe('pathBuilder (spec D, Params)', () => {
  const build = pathBuilder('https://crm.example.com/api/', '/customers/{id}/orders/{order}');

  it('fills placeholders URL-encoded and puts the other params in the query string', () => {
    expect(build({ id: 'a b/c', order: 7, status: 'open', tag: ['x', 'y&z'] })).toBe('/api/customers/a%20b%2Fc/orders/7?status=open&tag=x&tag=y%26z');
  });

  it('needs one value per placeholder', () => {
    expect(() => build({ id: 1 })).toThrow(/params must give 'order'/);
    expect(() => build({ id: 1, order: [1, 2] })).toThrow(/params must give 'order'/);
  });

  it('works without placeholders or params', () => {
    expect(pathBuilder('http://x', '/')(undefined)).toBe('/');
  });
});

describe('retry rules', () => {
  const policy = { max_attempts: 5, base_backoff_ms: 100, max_backoff_ms: 1000, budget_ms: 10_000 };

  it('backs off with full jitter up to the exponential step, capped', () => {
    expect(backoffMs(policy, 0, () => 0.999)).toBe(99);
    expect(backoffMs(policy, 3, () => 0.5)).toBe(400);
    expect(backoffMs(policy, 10, () => 0.999)).toBe(999);
    expect(backoffMs(policy, 2, () => 0)).toBe(0);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3000);
    expect(retryAfterMs('Mon, 23 Nov 2026 10:00:05 GMT', now)).toBe(5000);
    expect(retryAfterMs('Mon, 23 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });

  it('repeats a timed-out call only when that cannot do the work twice', () => {
    for (const m of ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']) expect(safeToRepeat(m, {})).toBe(true);
    expect(safeToRepeat('POST', {})).toBe(false);
    expect(safeToRepeat('PATCH', {})).toBe(false);
    expect(safeToRepeat('POST', { 'idempotency-key': 'k1' })).toBe(true);
  });
});
