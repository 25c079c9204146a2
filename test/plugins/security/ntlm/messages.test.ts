import { getHashes, createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ntlmToken } from '../../../../plugins/security/ntlm/authorizer.ts';
import { md4 } from '../../../../plugins/security/ntlm/md4.ts';
import {
  AV,
  authenticateMessage,
  negotiateMessage,
  ntHash,
  ntowfv2,
  parseChallenge,
  v2Responses,
  NtlmProtocolError,
} from '../../../../plugins/security/ntlm/messages.ts';

const hex = (b: Buffer) => b.toString('hex');
const unhex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('MD4 (RFC 1320, appendix A.5)', () => {
  it.each([
    ['', '31d6cfe0d16ae931b73c59d7e0c089c0'],
    ['a', 'bde52cb31de33e46245e05fbdbd6fb24'],
    ['abc', 'a448017aaf21d8525fc10ae87aa6729d'],
    ['message digest', 'd9130a8164549fe818874806e1c7014b'],
    ['abcdefghijklmnopqrstuvwxyz', 'd79e1c308aa5bbcdeea8ed63df412da9'],
    ['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', '043f8582f241db351ce627e153e7f0e4'],
    ['12345678901234567890123456789012345678901234567890123456789012345678901234567890', 'e33b4ddc9c38f2199c3e7b164fcc0536'],
  ])('MD4(%j)', (input, digest) => {
    expect(hex(md4(Buffer.from(input, 'latin1')))).toBe(digest);
  });

  it('agrees with OpenSSL where OpenSSL still has MD4, across block boundaries', () => {
    if (!getHashes().includes('md4')) return; // Node 20's OpenSSL 3 without the legacy provider
    for (const length of [55, 56, 63, 64, 65, 119, 120, 1000]) {
      const input = Buffer.alloc(length, length & 0xff);
      expect(hex(md4(input))).toBe(createHash('md4').update(input).digest('hex'));
    }
  });
});

// MS-NLMP 4.2.4: user "User", domain "Domain", password "Password", server challenge
// 0123456789abcdef, client challenge aa x8, time 0, target info NbDomainName "Domain" and
// NbComputerName "Server".
const SPEC_CHALLENGE = unhex(`
  4e544c4d53535000020000000c000c003800000033828ae20123456789abcdef
  00000000000000002400240044000000060070170000000f5300650072007600
  6500720002000c0044006f006d00610069006e0001000c005300650072007600
  6500720000000000`);
const SPEC_TARGET_INFO = unhex('02000c0044006f006d00610069006e0001000c0053006500720076006500720000000000');
const CLIENT_CHALLENGE = Buffer.alloc(8, 0xaa);
/** FILETIME 0 as epoch milliseconds. */
const FILETIME_ZERO = -11_644_473_600_000;

/** The AUTHENTICATE message of the 4.2.4 account and client challenge, answering `challenge`. */
function specAuthenticate(challenge: Buffer, workstation: string, nowMs: number): Buffer {
  return authenticateMessage({
    identity: { user: 'User', domain: 'Domain', workstation },
    responseKey: ntowfv2(ntHash('Password'), 'User', 'Domain'),
    challenge: parseChallenge(challenge),
    negotiate: negotiateMessage(),
    clientChallenge: CLIENT_CHALLENGE,
    now: () => nowMs,
  });
}

describe('NTLMv2 (MS-NLMP 4.2.4 test values)', () => {
  it('NT hash and NTOWFv2 (4.2.4.1.1)', () => {
    expect(hex(ntHash('Password'))).toBe('a4f49c406510bdcab6824ee7c30fd852');
    expect(hex(ntowfv2(ntHash('Password'), 'User', 'Domain'))).toBe('0c868a403bfd7a93a3001ef22ef02e3f');
  });

  it('upper-cases the user name, not the domain', () => {
    const nt = ntHash('Password');
    expect(ntowfv2(nt, 'user', 'Domain')).toEqual(ntowfv2(nt, 'User', 'Domain'));
    expect(ntowfv2(nt, 'User', 'DOMAIN')).not.toEqual(ntowfv2(nt, 'User', 'Domain'));
  });

  it('LMv2 response, NTProofStr, NTLMv2 response and session base key (4.2.4.1.3, 4.2.4.2)', () => {
    const r = v2Responses({
      responseKey: unhex('0c868a403bfd7a93a3001ef22ef02e3f'),
      serverChallenge: unhex('0123456789abcdef'),
      clientChallenge: CLIENT_CHALLENGE,
      time: Buffer.alloc(8),
      serverName: SPEC_TARGET_INFO,
      zeroLm: false,
    });
    expect(hex(r.lmChallengeResponse)).toBe('86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa');
    expect(hex(r.ntChallengeResponse)).toBe(
      '68cd0ab851e51c96aabc927bebef6a1c' +
        '01010000000000000000000000000000aaaaaaaaaaaaaaaa00000000' +
        '02000c0044006f006d00610069006e0001000c0053006500720076006500720000000000' +
        '00000000',
    );
    expect(hex(r.sessionBaseKey)).toBe('8de40ccadbc14a82f15cb0ad0de95ca3');
  });

  it('reads the CHALLENGE_MESSAGE of 4.2.4.3', () => {
    const challenge = parseChallenge(SPEC_CHALLENGE);
    expect(challenge.flags >>> 0).toBe(0xe28a8233);
    expect(hex(challenge.serverChallenge)).toBe('0123456789abcdef');
    expect(challenge.targetInfo.map((p) => [p.id, p.value.toString('utf16le')])).toEqual([
      [AV.NB_DOMAIN_NAME, 'Domain'],
      [AV.NB_COMPUTER_NAME, 'Server'],
    ]);
  });

  it('builds an AUTHENTICATE_MESSAGE carrying exactly the 4.2.4 responses', () => {
    const message = specAuthenticate(SPEC_CHALLENGE, 'COMPUTER', FILETIME_ZERO);
    const field = (at: number) => message.subarray(message.readUInt32LE(at + 4), message.readUInt32LE(at + 4) + message.readUInt16LE(at));
    expect(message.subarray(0, 12)).toEqual(unhex('4e544c4d5353500003000000'));
    expect(hex(field(12))).toBe('86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa');
    expect(hex(field(20).subarray(0, 16))).toBe('68cd0ab851e51c96aabc927bebef6a1c');
    expect(field(20).subarray(16 + 28)).toEqual(Buffer.concat([SPEC_TARGET_INFO, Buffer.alloc(4)]));
    expect(field(28).toString('utf16le')).toBe('Domain');
    expect(field(36).toString('utf16le')).toBe('User');
    expect(field(44).toString('utf16le')).toBe('COMPUTER');
    expect(field(52).length).toBe(0);
    // No MsvAvTimestamp in the challenge: no MIC.
    expect(message.subarray(72, 88)).toEqual(Buffer.alloc(16));
  });

  it('with a server timestamp: echoes it, zeroes LMv2, adds MsvAvFlags and a MIC', () => {
    const stamp = unhex('0090d336b734c301');
    const info = Buffer.concat([SPEC_TARGET_INFO.subarray(0, -4), unhex('07000800'), stamp, unhex('00000000')]);
    const challenge = Buffer.concat([SPEC_CHALLENGE.subarray(0, 40), Buffer.alloc(8), SPEC_CHALLENGE.subarray(48, 0x44), info]);
    challenge.writeUInt16LE(info.length, 40);
    challenge.writeUInt16LE(info.length, 42);
    challenge.writeUInt32LE(0x44, 44);
    const message = specAuthenticate(challenge, '', 0);
    const nt = message.subarray(message.readUInt32LE(24), message.readUInt32LE(24) + message.readUInt16LE(20));
    expect(nt.subarray(24, 32)).toEqual(stamp);
    expect(message.subarray(message.readUInt32LE(16), message.readUInt32LE(16) + 24)).toEqual(Buffer.alloc(24));
    expect(hex(nt.subarray(44))).toContain('0600040002000000');
    expect(message.subarray(72, 88)).not.toEqual(Buffer.alloc(16));
  });

  it.each([
    ['too short', Buffer.from('NTLMSSP\0', 'latin1')],
    ['another message type', Buffer.concat([SPEC_CHALLENGE.subarray(0, 8), unhex('01000000'), SPEC_CHALLENGE.subarray(12)])],
    ['target info past the end', Buffer.concat([SPEC_CHALLENGE.subarray(0, 40), unhex('ff00ff0044000000'), SPEC_CHALLENGE.subarray(48)])],
    ['a truncated AV pair', Buffer.concat([SPEC_CHALLENGE.subarray(0, 40), unhex('0600060044000000'), SPEC_CHALLENGE.subarray(48, 0x44), unhex('02000c004400')])],
  ])('refuses a challenge that is %s', (_label, raw) => {
    expect(() => parseChallenge(raw)).toThrow(NtlmProtocolError);
  });
});

describe('WWW-Authenticate', () => {
  it.each([
    ['NTLM TlRMTVNTUAACAAAA', 'TlRMTVNTUAACAAAA'],
    ['ntlm TlRMTVNTUAACAAAA==', 'TlRMTVNTUAACAAAA=='],
    [['Negotiate', 'NTLM TlRMTVNTUAACAAAA'], 'TlRMTVNTUAACAAAA'],
    ['Negotiate, NTLM TlRMTVNTUAACAAAA', 'TlRMTVNTUAACAAAA'],
    ['NTLM', undefined],
    ['Basic realm="x"', undefined],
    [undefined, undefined],
  ])('%j → %j', (header, token) => {
    expect(ntlmToken(header)).toBe(token);
  });
});
