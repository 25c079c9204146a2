import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isLocalHostCall, runLocalHostCall } from '../../../kernel/sandbox/local-calls.ts';

const hex = createHmac('sha256', 'key').update('body').digest('hex');
const b64 = createHmac('sha256', 'key').update('body').digest('base64');
const verify = (signature: string, encoding = 'hex') => runLocalHostCall('crypto.verifyHmac', JSON.stringify({ key: 'key', data: { text: 'body' }, encoding, signature }));

describe('sandbox-local host calls', () => {
  it('computes HMAC-SHA256 of text and of bytes', () => {
    expect(runLocalHostCall('crypto.hmac', JSON.stringify({ key: 'key', data: { text: 'body' }, encoding: 'hex' }))).toEqual({ ok: true, value: hex });
    expect(runLocalHostCall('crypto.hmac', JSON.stringify({ key: 'key', data: { bytes: [...Buffer.from('body')] }, encoding: 'base64' }))).toEqual({ ok: true, value: b64 });
  });

  it('verifies only the canonical signature', () => {
    expect(verify(hex)).toEqual({ ok: true, value: true });
    expect(verify(hex.toUpperCase())).toEqual({ ok: true, value: true });
    expect(verify(b64, 'base64')).toEqual({ ok: true, value: true });
    expect(verify(hex + 'zz')).toEqual({ ok: true, value: false });
    expect(verify(hex.slice(0, 62))).toEqual({ ok: true, value: false });
    expect(verify('0'.repeat(64))).toEqual({ ok: true, value: false });
    expect(verify(b64 + '!', 'base64')).toEqual({ ok: true, value: false });
  });

  it('checks arguments on the host and answers with an error envelope', () => {
    const reply = runLocalHostCall('crypto.hmac', JSON.stringify({ key: 1, data: { text: 'x' }, encoding: 'hex' }));
    expect(reply.ok).toBe(false);
    expect(runLocalHostCall('crypto.hmac', 'not json').ok).toBe(false);
    expect(isLocalHostCall('pubsub.publish')).toBe(false);
  });
});
