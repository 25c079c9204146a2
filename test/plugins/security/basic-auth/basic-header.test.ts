import { describe, expect, it } from 'vitest';
import { basicToken, decodeBasic } from '../../../../plugins/security/basic-auth/basic-header.ts';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

describe('basicToken', () => {
  it('takes the token of one Basic credential, scheme in any case', () => {
    expect(basicToken(`Basic ${b64('a:b')}`)).toBe(b64('a:b'));
    expect(basicToken(`basic ${b64('a:b')}`)).toBe(b64('a:b'));
    expect(basicToken(`BASIC   ${b64('a:b')}`)).toBe(b64('a:b'));
  });

  it('says absent for no header or another scheme', () => {
    expect(basicToken(undefined)).toBeUndefined();
    expect(basicToken('Bearer abc')).toBeUndefined();
    expect(basicToken('Basically abc')).toBeUndefined();
  });

  it('says unusable for several credentials or a Basic header without exactly one token', () => {
    expect(basicToken([`Basic ${b64('a:b')}`, `Basic ${b64('c:d')}`])).toBeNull();
    expect(basicToken(`Basic ${b64('a:b')}, Basic ${b64('c:d')}`)).toBeNull();
    expect(basicToken(`Basic ${b64('a:b')} ${b64('c:d')}`)).toBeNull();
    expect(basicToken('Basic')).toBeNull();
    expect(basicToken('Basic ')).toBeNull();
  });
});

describe('decodeBasic', () => {
  it('splits at the first colon: the password keeps its colons', () => {
    expect(decodeBasic(b64('alice:pa:ss:word'))).toEqual({ username: 'alice', secret: 'pa:ss:word' });
    expect(decodeBasic(b64('zoë:pässwörd'))).toEqual({ username: 'zoë', secret: 'pässwörd' });
  });

  it.each([
    ['no colon', b64('alicepassword')],
    ['empty username', b64(':password')],
    ['empty password', b64('alice:')],
    ['both empty', b64(':')],
    ['characters outside base64', '!!!!'],
    ['URL-safe alphabet', 'YTo_Pz8='],
    ['missing padding', b64('a:bc').replace(/=+$/, '')],
    ['padding in the middle', 'YT=6Yg=='],
    ['embedded space', `${b64('a:b').slice(0, 2)} ${b64('a:b').slice(2)}`],
    ['invalid UTF-8', Buffer.from([0x61, 0x3a, 0xff, 0xfe]).toString('base64')],
    ['control character in the password', b64('alice:pass\nword')],
    ['control character in the username', b64('al\u0000ice:password')],
    ['an oversized token', b64(`alice:${'x'.repeat(2000)}`)],
    ['an empty token', ''],
  ])('refuses %s', (_label, token) => {
    expect(decodeBasic(token)).toBeUndefined();
  });
});
