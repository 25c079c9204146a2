import { describe, expect, it } from 'vitest';
import { ChannelRouter, toRoutePattern, type RouteEntry } from '../../../kernel/http/router.ts';
import type { ChannelRuntime } from '../../../kernel/http/chain.ts';
import type { Channel } from '../../../kernel/config/schema.ts';

const runtime = (name: string): ChannelRuntime => ({ channel: { name } as Channel, steps: [], onError: [], onResponse: [], serviceStep: -1 });
const entry = (name: string, url: string, methods?: string[]): RouteEntry => ({ runtime: runtime(name), pattern: toRoutePattern(url), methods, path: ['channel_rest', name] });

describe('ChannelRouter', () => {
  it('turns {name} into parameters', () => {
    expect(toRoutePattern('/a/{x}/b/{y}')).toBe('/a/:x/b/:y');
    const m = new ChannelRouter([entry('c', '/a/{x}/b/{y}')]).match('GET', '/a/1/b/two%20words');
    expect(m).toMatchObject({ kind: 'channel', params: { x: '1', y: 'two words' } });
  });

  it('tells channels on one path apart by method, and answers other methods with Allow', () => {
    const r = new ChannelRouter([entry('get', '/x', ['GET']), entry('post', '/x', ['POST'])]);
    expect(r.match('GET', '/x')).toMatchObject({ kind: 'channel', runtime: { channel: { name: 'get' } } });
    expect(r.match('POST', '/x')).toMatchObject({ kind: 'channel', runtime: { channel: { name: 'post' } } });
    expect(r.match('DELETE', '/x')).toMatchObject({ kind: 'method', allow: 'GET, POST', runtime: { channel: { name: 'get' } } });
  });

  it('lets an any-method channel take what the restricted ones do not', () => {
    const r = new ChannelRouter([entry('get', '/x', ['GET']), entry('any', '/x')]);
    expect(r.match('PUT', '/x')).toMatchObject({ runtime: { channel: { name: 'any' } } });
  });

  it('reports conflicts instead of picking one', () => {
    expect(new ChannelRouter([entry('a', '/x'), entry('b', '/x')]).issues[0]!.message).toMatch(/any method/);
    expect(new ChannelRouter([entry('a', '/x', ['GET']), entry('b', '/x', ['GET'])]).issues[0]!.message).toMatch(/already serves GET/);
    expect(new ChannelRouter([entry('a', '/x/{p}'), entry('b', '/x/{q}')]).issues[0]!.message).toMatch(/conflicts/);
  });

  it('serves trailing wildcards (topic names with slashes) and misses unknown paths', () => {
    const r = new ChannelRouter([{ runtime: runtime('topics'), pattern: '/t/*', methods: ['POST'], path: ['route'] }]);
    expect(r.match('POST', '/t/orders/eu/new')).toMatchObject({ params: { '*': 'orders/eu/new' } });
    expect(r.match('GET', '/nothing')).toBeUndefined();
  });
});
