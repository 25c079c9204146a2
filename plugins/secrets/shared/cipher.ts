import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM with a fresh 96-bit nonce per value. The value's owner and name are bound in as
 * associated data, so a ciphertext copied onto another row of the table does not decrypt.
 */
export const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export interface Sealed {
  nonce: Buffer;
  /** Ciphertext followed by the authentication tag. */
  box: Buffer;
}

export function seal(key: Buffer, label: string, plaintext: string): Sealed {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(label, 'utf8'));
  const box = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return { nonce, box };
}

/** Throws when the key is wrong or the row was tampered with. */
export function open(key: Buffer, label: string, sealed: Sealed): string {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.nonce);
  decipher.setAAD(Buffer.from(label, 'utf8'));
  decipher.setAuthTag(sealed.box.subarray(sealed.box.length - TAG_BYTES));
  return Buffer.concat([decipher.update(sealed.box.subarray(0, sealed.box.length - TAG_BYTES)), decipher.final()]).toString('utf8');
}
