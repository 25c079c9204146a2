import { createHmac } from 'node:crypto';
import { md4 } from './md4.ts';

/**
 * NTLM messages (MS-NLMP 2.2.1) and the NTLMv2 response (MS-NLMP 3.3.2), client side only.
 * No signing or sealing: HTTP uses NTLM to authenticate the connection, nothing more.
 */

const SIGNATURE = Buffer.from('NTLMSSP\0', 'latin1');

export const FLAG = {
  UNICODE: 0x00000001,
  OEM: 0x00000002,
  REQUEST_TARGET: 0x00000004,
  NTLM: 0x00000200,
  ALWAYS_SIGN: 0x00008000,
  EXTENDED_SESSIONSECURITY: 0x00080000,
  TARGET_INFO: 0x00800000,
  VERSION: 0x02000000,
  N128: 0x20000000,
  N56: 0x80000000,
} as const;

/** What a client asks for: Unicode strings, NTLM with extended session security (NTLMv2 answers). */
export const NEGOTIATE_FLAGS =
  (FLAG.UNICODE | FLAG.OEM | FLAG.REQUEST_TARGET | FLAG.NTLM | FLAG.ALWAYS_SIGN | FLAG.EXTENDED_SESSIONSECURITY | FLAG.N128 | FLAG.N56) >>> 0;

/** AV_PAIR ids (MS-NLMP 2.2.2.1) this client reads or writes. */
export const AV = {
  EOL: 0,
  NB_COMPUTER_NAME: 1,
  NB_DOMAIN_NAME: 2,
  FLAGS: 6,
  TIMESTAMP: 7,
} as const;
/** MsvAvFlags bit: the AUTHENTICATE message carries a MIC. */
const AV_FLAG_MIC = 0x00000002;

export interface AvPair {
  id: number;
  value: Buffer;
}

export interface Challenge {
  flags: number;
  serverChallenge: Buffer;
  targetInfo: AvPair[];
  /** The whole CHALLENGE_MESSAGE, for the MIC. */
  raw: Buffer;
}

export class NtlmProtocolError extends Error {
  readonly code = 'ERR_NTLM_PROTOCOL';
}

export function utf16(text: string): Buffer {
  return Buffer.from(text, 'utf16le');
}

function hmacMd5(key: Buffer, ...parts: Buffer[]): Buffer {
  const h = createHmac('md5', key);
  for (const part of parts) h.update(part);
  return h.digest();
}

/** NTOWFv1, the NT hash: MD4 of the UTF-16LE password. */
export function ntHash(password: string): Buffer {
  return md4(utf16(password));
}

/** NTOWFv2 (MS-NLMP 3.3.2): the user name is upper-cased, the domain is not. */
export function ntowfv2(ntHashValue: Buffer, user: string, domain: string): Buffer {
  return hmacMd5(ntHashValue, utf16(user.toUpperCase() + domain));
}

/** NEGOTIATE_MESSAGE without domain or workstation (both are sent in the AUTHENTICATE message). */
export function negotiateMessage(): Buffer {
  const m = Buffer.alloc(32);
  SIGNATURE.copy(m, 0);
  m.writeUInt32LE(1, 8);
  m.writeUInt32LE(NEGOTIATE_FLAGS, 12);
  // DomainNameFields and WorkstationFields stay zero: absent.
  return m;
}

/** Reads a CHALLENGE_MESSAGE; throws NtlmProtocolError on anything malformed. */
export function parseChallenge(raw: Buffer): Challenge {
  if (raw.length < 32 || !raw.subarray(0, 8).equals(SIGNATURE) || raw.readUInt32LE(8) !== 2) {
    throw new NtlmProtocolError('the server sent no valid NTLM challenge');
  }
  const flags = raw.readUInt32LE(20);
  const serverChallenge = Buffer.from(raw.subarray(24, 32));
  let targetInfo: AvPair[] = [];
  if (raw.length >= 48) {
    const length = raw.readUInt16LE(40);
    const offset = raw.readUInt32LE(44);
    if (length > 0) {
      if (offset + length > raw.length) throw new NtlmProtocolError('the NTLM challenge target info lies outside the message');
      targetInfo = parseAvPairs(raw.subarray(offset, offset + length));
    }
  }
  return { flags, serverChallenge, targetInfo, raw: Buffer.from(raw) };
}

export function parseAvPairs(data: Buffer): AvPair[] {
  const pairs: AvPair[] = [];
  let at = 0;
  while (at + 4 <= data.length) {
    const id = data.readUInt16LE(at);
    const length = data.readUInt16LE(at + 2);
    if (id === AV.EOL) return pairs;
    if (at + 4 + length > data.length) break;
    pairs.push({ id, value: Buffer.from(data.subarray(at + 4, at + 4 + length)) });
    at += 4 + length;
  }
  // A list that simply ends without MsvAvEOL is tolerated; one cut inside a pair is not.
  if (at === data.length) return pairs;
  throw new NtlmProtocolError('the NTLM challenge target info is truncated');
}

export function encodeAvPairs(pairs: readonly AvPair[]): Buffer {
  const parts: Buffer[] = [];
  for (const { id, value } of [...pairs, { id: AV.EOL, value: Buffer.alloc(0) }]) {
    const header = Buffer.alloc(4);
    header.writeUInt16LE(id, 0);
    header.writeUInt16LE(value.length, 2);
    parts.push(header, value);
  }
  return Buffer.concat(parts);
}

/** FILETIME: 100 ns ticks since 1601-01-01, little-endian. */
export function fileTime(epochMs: number): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE((BigInt(Math.trunc(epochMs)) + 11_644_473_600_000n) * 10_000n);
  return out;
}

export interface V2Responses {
  ntChallengeResponse: Buffer;
  lmChallengeResponse: Buffer;
  sessionBaseKey: Buffer;
}

/**
 * The NTLMv2 and LMv2 responses (MS-NLMP 3.3.2). `serverName` is the AV pairs the client
 * echoes, EOL included. With a server timestamp (`zeroLm`) the LMv2 response is Z(24).
 */
export function v2Responses(input: {
  responseKey: Buffer;
  serverChallenge: Buffer;
  clientChallenge: Buffer;
  time: Buffer;
  serverName: Buffer;
  zeroLm: boolean;
}): V2Responses {
  const { responseKey, serverChallenge, clientChallenge, time, serverName } = input;
  const temp = Buffer.concat([Buffer.from([1, 1]), Buffer.alloc(6), time, clientChallenge, Buffer.alloc(4), serverName, Buffer.alloc(4)]);
  const ntProofStr = hmacMd5(responseKey, serverChallenge, temp);
  const lmChallengeResponse = input.zeroLm
    ? Buffer.alloc(24)
    : Buffer.concat([hmacMd5(responseKey, serverChallenge, clientChallenge), clientChallenge]);
  return {
    ntChallengeResponse: Buffer.concat([ntProofStr, temp]),
    lmChallengeResponse,
    sessionBaseKey: hmacMd5(responseKey, ntProofStr),
  };
}

export interface Identity {
  /** As sent: `user` or a UPN `user@domain.example`. */
  user: string;
  /** NetBIOS or DNS domain; '' with a UPN. */
  domain: string;
  workstation: string;
}

export interface AuthenticateInput {
  identity: Identity;
  /** NTOWFv2 of the identity, computed once per definition. */
  responseKey: Buffer;
  challenge: Challenge;
  negotiate: Buffer;
  clientChallenge: Buffer;
  /** Used when the server sends no MsvAvTimestamp. */
  now: () => number;
}

const HEADER_LENGTH = 88; // fixed fields, Version (8) and MIC (16)
const MIC_OFFSET = 72;

/**
 * AUTHENTICATE_MESSAGE with an NTLMv2 response. When the challenge carries MsvAvTimestamp, the
 * client uses that time, sends Z(24) as LMv2 and protects the three messages with a MIC
 * (MS-NLMP 3.1.5.1.2), flagged in MsvAvFlags.
 */
export function authenticateMessage(input: AuthenticateInput): Buffer {
  const { identity, challenge } = input;
  const serverTime = challenge.targetInfo.find((p) => p.id === AV.TIMESTAMP)?.value;
  const withMic = serverTime !== undefined && serverTime.length === 8;
  const pairs = challenge.targetInfo.filter((p) => p.id !== AV.FLAGS);
  if (withMic) {
    const previous = challenge.targetInfo.find((p) => p.id === AV.FLAGS && p.value.length === 4)?.value.readUInt32LE(0) ?? 0;
    const value = Buffer.alloc(4);
    value.writeUInt32LE((previous | AV_FLAG_MIC) >>> 0);
    pairs.push({ id: AV.FLAGS, value });
  } else {
    pairs.push(...challenge.targetInfo.filter((p) => p.id === AV.FLAGS));
  }
  const responses = v2Responses({
    responseKey: input.responseKey,
    serverChallenge: challenge.serverChallenge,
    clientChallenge: input.clientChallenge,
    time: withMic ? serverTime : fileTime(input.now()),
    serverName: encodeAvPairs(pairs),
    zeroLm: withMic,
  });

  const flags = ((challenge.flags & NEGOTIATE_FLAGS) | FLAG.UNICODE) >>> 0;
  const payload: Buffer[] = [
    responses.lmChallengeResponse,
    responses.ntChallengeResponse,
    utf16(identity.domain),
    utf16(identity.user),
    utf16(identity.workstation),
    Buffer.alloc(0), // EncryptedRandomSessionKey: no key exchange
  ];
  const message = Buffer.alloc(HEADER_LENGTH + payload.reduce((n, p) => n + p.length, 0));
  SIGNATURE.copy(message, 0);
  message.writeUInt32LE(3, 8);
  let offset = HEADER_LENGTH;
  payload.forEach((part, i) => {
    const field = 12 + i * 8;
    message.writeUInt16LE(part.length, field);
    message.writeUInt16LE(part.length, field + 2);
    message.writeUInt32LE(offset, field + 4);
    part.copy(message, offset);
    offset += part.length;
  });
  message.writeUInt32LE(flags, 60);
  // Version (64..72) stays zero: NEGOTIATE_VERSION is not requested.
  if (withMic) {
    // Without key exchange the exported session key is the session base key (MS-NLMP 3.4.5.1).
    hmacMd5(responses.sessionBaseKey, input.negotiate, challenge.raw, message).copy(message, MIC_OFFSET);
  }
  return message;
}
