import { createHash } from 'node:crypto';

/** The server key a connection pins: the whole key, or only its SHA256 fingerprint. */
export interface PinnedKey {
  /** `SHA256:…` as `ssh-keygen -lf` prints it (base64, no padding). */
  fingerprint: string;
  /** The key type (`ssh-ed25519`) when the whole key is pinned: the only host key algorithm offered then. */
  type: string | undefined;
}

const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}$/;
const KEY_LINE = /^([a-z0-9@.-]+) ([A-Za-z0-9+/]+={0,2})(?: .*)?$/;

/** SHA256 fingerprint of a key blob, as OpenSSH prints it. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The key type written at the start of an SSH key blob, or undefined when the blob is not one. */
function blobType(blob: Buffer): string | undefined {
  if (blob.length < 4) return undefined;
  const length = blob.readUInt32BE(0);
  return length > 0 && length < 64 && 4 + length <= blob.length ? blob.subarray(4, 4 + length).toString('latin1') : undefined;
}

/**
 * `ssh-ed25519 AAAA… [comment]` (an ssh-keyscan line without its host, or a .pub file) or
 * `SHA256:…`; a string saying what is wrong otherwise (config check).
 */
export function parsePinnedKey(text: string): PinnedKey | string {
  const trimmed = text.trim();
  if (trimmed.startsWith('SHA256:')) return FINGERPRINT.test(trimmed) ? { fingerprint: trimmed, type: undefined } : 'a SHA256 fingerprint is SHA256: and 43 base64 characters, as `ssh-keygen -lf` prints it';
  if (/^(insecure|any|none|\*)/i.test(trimmed)) return 'svc always checks the server key: give the server key (ssh-keyscan -t ed25519 host) or its SHA256 fingerprint';
  const match = KEY_LINE.exec(trimmed);
  if (!match) return 'give the server key as `ssh-ed25519 AAAA…` (ssh-keyscan -t ed25519 host, without the host name) or its fingerprint `SHA256:…`';
  const blob = Buffer.from(match[2]!, 'base64');
  const type = blobType(blob);
  if (type !== match[1]) return `the key text does not hold a ${match[1]} key`;
  return { fingerprint: fingerprintOf(blob), type };
}
