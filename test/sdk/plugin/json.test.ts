import { describe, expect, it } from 'vitest';
import { JsonBodyError, readJsonBody } from '../../../sdk/plugin/json.ts';

/** The JSON reader json channels and pub/sub publish bodies share; over HTTP in json.test.ts and the pub/sub tests. */

const read = (text: string, maxDepth = 3) => readJsonBody(Buffer.from(text, 'utf8'), maxDepth);

function refusal(text: string, maxDepth = 3): string {
  try {
    read(text, maxDepth);
  } catch (err) {
    expect(err).toBeInstanceOf(JsonBodyError);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${text}`);
}

describe('readJsonBody: nesting', () => {
  it('counts arrays and objects alike, the outermost as level 1', () => {
    expect(read('[[[1]]]')).toEqual([[[1]]]);
    expect(read('{"a":{"b":[]}}')).toEqual({ a: { b: [] } });
    expect(refusal('[[[[1]]]]')).toBe('arrays and objects nested deeper than 3 levels');
    expect(refusal('{"a":[{"b":1}]}', 2)).toMatch(/deeper than 2/);
    expect(read('1', 1)).toBe(1);
  });

  it('measures depth, not the number of containers', () => {
    expect(read(JSON.stringify(Array.from({ length: 1000 }, () => [{ a: [] }])), 4)).toHaveLength(1000);
    expect(refusal(JSON.stringify(Array.from({ length: 1000 }, () => [{ a: [] }])), 3)).toMatch(/deeper than 3/);
  });

  it('ignores brackets inside strings, escaped quotes and backslashes included', () => {
    for (const s of ['[[[[', '\\"[[[[', '\\\\', '\\\\"', '{{{{"]]]]']) expect(read(JSON.stringify({ s: [s] }), 2)).toEqual({ s: [s] });
    expect(read(String.raw`["\\", [["\""]]]`)).toEqual(['\\', [['"']]]);
    expect(refusal(String.raw`["\\", [[["\""]]]]`)).toMatch(/deeper than 3/);
    // Multi-byte UTF-8 never hides a bracket or a quote.
    expect(read('["é€😀", ["[[[[[["]]')).toEqual(['é€😀', ['[[[[[[']]);
  });

  it('leaves malformed text to the parser', () => {
    expect(refusal('[1,')).toMatch(/JSON/);
    expect(refusal(']]]]][[[[')).toMatch(/JSON|Unexpected/);
    expect(refusal('"unterminated [[[[[[')).toMatch(/JSON|Unterminated/);
  });
});

describe('readJsonBody: prototype-poisoning keys', () => {
  const poisoned = [
    '{"__proto__": {"x": 1}}',
    String.raw`{"\u005f_proto__": {"x": 1}}`,
    String.raw`{"\u005F\u005F\u0070\u0072\u006F\u0074\u006F\u005F\u005F": 1}`,
    '[{"a": {"__proto__": null}}]',
    '{"constructor": {"prototype": {"x": 1}}}',
    String.raw`{"constructor": {"\u0070rototype": 1}}`,
    String.raw`{"\u0063onstructor": {"prototype": null}}`,
  ];

  it('refuses them, however spelled, at any depth', () => {
    for (const text of poisoned) expect(refusal(text)).toMatch(/^the key "(__proto__|constructor\.prototype)" is not allowed/);
  });

  it('accepts the words and escapes as data', () => {
    expect(read(String.raw`{"v": "__proto__", "w": "\u005f_proto__", "constructor": {"name": "x"}, "__proto__x": 1}`)).toEqual({ v: '__proto__', w: '__proto__', constructor: { name: 'x' }, __proto__x: 1 });
    expect(read('{"constructor": null}')).toEqual({ constructor: null });
  });
});
