import { describe, expect, it } from 'vitest';
import { compilePatterns, isStoredTopicName, isStoredTopicPattern, isTopicName, isTopicPattern, shortTopic, topicTenant } from '../../../../plugins/pubsub/shared/patterns.ts';
import { topicFromPath } from '../../../../plugins/pubsub/shared/topic-name.ts';

describe('topic patterns', () => {
  it('* matches within one segment only', () => {
    const m = compilePatterns(['/svc/test/*']);
    expect(m.matches('/svc/test/sample')).toBe(true);
    expect(m.matches('/svc/test/a/b')).toBe(false);
    expect(m.matches('/svc/other/sample')).toBe(false);
  });

  it('** matches across segments', () => {
    const m = compilePatterns(['/demo/**']);
    expect(m.matches('/demo/a')).toBe(true);
    expect(m.matches('/demo/a/b/c')).toBe(true);
    expect(m.matches('/demox/a')).toBe(false);
  });

  it('exact names match only themselves; regex characters are literal', () => {
    const m = compilePatterns(['/a.b/c+d']);
    expect(m.matches('/a.b/c+d')).toBe(true);
    expect(m.matches('/aXb/ccd')).toBe(false);
  });

  it('* inside a segment', () => {
    const m = compilePatterns(['/orders/new-*']);
    expect(m.matches('/orders/new-eu')).toBe(true);
    expect(m.matches('/orders/old-eu')).toBe(false);
  });

  it('no patterns match nothing', () => {
    expect(compilePatterns([]).matches('/x')).toBe(false);
  });

  it('validates names and patterns', () => {
    expect(isTopicName('/svc/test/sample')).toBe(true);
    expect(isTopicName('svc/test')).toBe(false);
    expect(isTopicName('/a//b')).toBe(false);
    expect(isTopicName('/a/*')).toBe(false);
    expect(isTopicName('/a%2F')).toBe(false);
    expect(isTopicPattern('/a/*')).toBe(true);
    expect(isTopicPattern('/a/**')).toBe(true);
    expect(isTopicPattern('/a/***')).toBe(false);
    expect(isTopicPattern('a')).toBe(false);
  });
});

describe("tenants' topics", () => {
  it("are stored qualified, their tenant in place of the leading slash; the short name is what the tenant wrote", () => {
    expect(topicTenant('acme/orders/new')).toBe('acme');
    expect(topicTenant('/orders/new')).toBeUndefined();
    expect(shortTopic('acme/orders/new')).toBe('/orders/new');
    expect(shortTopic('/orders/new')).toBe('/orders/new');
    expect(isStoredTopicName('acme/orders')).toBe(true);
    expect(isStoredTopicName('/orders')).toBe(true);
    for (const bad of ['acme', 'acme/', 'acme//x', 'Acme/x', 'acme/x/*']) expect(isStoredTopicName(bad), bad).toBe(false);
    expect(isStoredTopicPattern('acme/**')).toBe(true);
    expect(isStoredTopicPattern('*/orders')).toBe(false);
  });

  it("a platform pattern never matches a tenant's topic, a tenant's never another's or the platform's", () => {
    const platform = compilePatterns(['/**', '/*/orders']);
    expect(platform.matches('/acme/orders')).toBe(true);
    expect(platform.matches('acme/orders')).toBe(false);
    const acme = compilePatterns(['acme/**', 'acme/*']);
    expect(acme.matches('acme/orders/new')).toBe(true);
    for (const other of ['globex/orders', 'acme2/orders', '/acme/orders', 'acmeorders']) expect(acme.matches(other), other).toBe(false);
  });
});

describe('topic names in URLs', () => {
  it('the leading slash is the path separator', () => {
    expect(topicFromPath('svc/test/sample')).toBe('/svc/test/sample');
  });
  it('percent-encoded names address the same topic', () => {
    expect(topicFromPath('%2Fsvc%2Ftest%2Fsample')).toBe('/svc/test/sample');
    expect(topicFromPath('svc%2Ftest%2Fsample')).toBe('/svc/test/sample');
    expect(topicFromPath('%252Fsvc%252Ftest')).toBe('/svc/test');
  });
  it('an extra slash is tolerated', () => {
    expect(topicFromPath('/svc/test/sample')).toBe('/svc/test/sample');
  });
  it('invalid names are refused', () => {
    expect(topicFromPath('')).toBeUndefined();
    expect(topicFromPath(undefined)).toBeUndefined();
    expect(topicFromPath('%E0%A4%A')).toBeUndefined();
    expect(topicFromPath('a//b')).toBeUndefined();
  });
});
