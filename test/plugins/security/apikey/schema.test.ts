import { describe, expect, it } from 'vitest';
import { parseConfig } from '../schema-support.ts';

describe('apikey definitions', () => {
  it('take an optional key, from the environment too', () => {
    const config = parseConfig('security:\n  - { name: a, type: apikey, key: "${KEY}" }\n  - { name: b, type: apikey }\n', { KEY: 'k-123_ABC.~' });
    expect(config.security).toEqual([
      { name: 'a', type: 'apikey', key: 'k-123_ABC.~' },
      { name: 'b', type: 'apikey' },
    ]);
  });

  it.each([
    ['an empty key', '""', /key: must not be empty/],
    ['a space', '"two words"', /key: must be printable ASCII without spaces or commas/],
    ['a comma', '"a,b"', /without spaces or commas/],
    ['a non-ASCII character', '"clé"', /printable ASCII/],
    ['a key over 1024 characters', `"${'k'.repeat(1025)}"`, /at most 1024/],
  ])('refuse %s', (_label, key, message) => {
    expect(() => parseConfig(`security:\n  - { name: a, type: apikey, key: ${key} }\n`)).toThrow(message);
  });

  it('refuse other fields: the header is always X-API-Key', () => {
    expect(() => parseConfig('security:\n  - { name: a, type: apikey, header: X-Token }\n')).toThrow(/security\[0\]/);
  });
});
