import { randomBytes } from 'node:crypto';

/**
 * Message IDs: unique, not secret. A random per-process prefix (64 bits) and a counter:
 * no entropy drawn per publish, and no collision across restarts.
 */
const prefix = randomBytes(8).toString('hex');
let counter = 0;
export function newMsgId(): string {
  return `svcpsm${prefix}${(counter++).toString(16).padStart(8, '0')}`;
}

/** Subscription keys are secrets: 192 bits from the CSPRNG. */
export function newSubKey(): string {
  return `svcpsk.${randomBytes(24).toString('base64url')}`;
}
