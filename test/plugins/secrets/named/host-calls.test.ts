import { createHmac } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

const HOOK_VALUE = 'hook-value-7f3a9c-from-the-environment';
const OTHER_VALUE = 'other-value-51d0e2-literal-in-config';
const CLI_VALUE = 'cli-value-c0ffee-sent-over-the-socket';

const CONFIG = `
secrets:
  - { name: hook, value: "\${HOOK_SECRET}", services: [signer] }
  - { name: other, value: ${OTHER_VALUE}, services: [intruder] }
  - { name: unset, services: [signer] }
  - { name: nobody, value: "\${HOOK_SECRET}" }
channel_rest:
  - { name: signer, url_path: /signer, service: signer, method: POST, data_format: json, security: none }
  - { name: intruder, url_path: /intruder, service: intruder, method: POST, data_format: json, security: none }
  - { name: raw, url_path: /raw, service: raw, method: POST, data_format: json, security: none }
`;

/**
 * Runs one SDK call named in the payload and answers with its result, or with the error it threw
 * (kind, status, message), so each case reads what a service would see.
 */
const PROBE = `import { secret, service, fromBase64 } from 'svc/sdk';
export default service({
  async POST(ctx) {
    const { op, name, text, base64, signature, options } = ctx.payload;
    const data = base64 !== undefined ? fromBase64(base64) : text;
    try {
      const s = secret(name);
      if (op === 'signedHeader') return { value: await s.signedHeader({ ...options, data }) };
      if (op === 'snoop') {
        const seen = [JSON.stringify(s), String(s), Object.getOwnPropertyNames(s).join(','), Object.getOwnPropertyNames(Object.getPrototypeOf(s)).join(',')];
        for (const key of Object.getOwnPropertyNames(s)) seen.push(String(s[key]));
        return { value: seen };
      }
      if (op === 'huge') return { value: await s.hmacSha256Hex('x'.repeat(8 * 1024 * 1024 + 1)) };
      return { value: await (op.startsWith('verify') ? s[op](data, signature) : s[op](data)) };
    } catch (e) {
      return { error: { kind: e.kind ?? e.name, status: e.status, message: String(e.message) } };
    }
  },
});
`;

/** Lets a refusal escape, to see what the caller of the channel gets. */
const RAW = `import { secret, service } from 'svc/sdk';
export default service({ POST: async (ctx) => ({ value: await secret(ctx.payload.name).hmacSha256Hex('x') }) });
`;

const logs: Array<Record<string, unknown>> = [];
const bodies: string[] = [];
let k: TestKernel;

beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: { 'signer.ts': PROBE, 'intruder.ts': PROBE, 'raw.ts': RAW }, env: { HOOK_SECRET: HOOK_VALUE }, logs });
});
afterAll(() => k?.close());

async function call(path: string, payload: Record<string, unknown>): Promise<{ value?: unknown; error?: { kind: string; status: number; message: string } }> {
  const res = await k.app.inject({ method: 'POST', url: path, payload });
  bodies.push(res.body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

const sign = (op: string, payload: Record<string, unknown>) => call('/signer', { op, name: 'hook', ...payload });
const mac = (algorithm: string, key: string, data: string | Buffer) => createHmac(algorithm, key).update(data);

describe('HMAC with a named secret, in a real sandbox', () => {
  const text = '{"ref":"refs/heads/main","pusher":"zoë ✓"}';
  const bytes = Buffer.from([0, 255, 128, 10, 13, 0xc3, 0x28]);

  it.each([
    ['hmacSha256Hex', 'sha256', 'hex'],
    ['hmacSha256Base64', 'sha256', 'base64'],
    ['hmacSha1Hex', 'sha1', 'hex'],
    ['hmacSha1Base64', 'sha1', 'base64'],
  ] as const)('%s equals node:crypto over text and over bytes', async (op, algorithm, encoding) => {
    expect(await sign(op, { text })).toEqual({ value: mac(algorithm, HOOK_VALUE, text).digest(encoding) });
    expect(await sign(op, { base64: bytes.toString('base64') })).toEqual({ value: mac(algorithm, HOOK_VALUE, bytes).digest(encoding) });
    expect(await sign(op, { text: '' })).toEqual({ value: mac(algorithm, HOOK_VALUE, '').digest(encoding) });
  });

  it.each([
    ['verifyHmacSha256Hex', 'sha256', 'hex'],
    ['verifyHmacSha256Base64', 'sha256', 'base64'],
    ['verifyHmacSha1Hex', 'sha1', 'hex'],
    ['verifyHmacSha1Base64', 'sha1', 'base64'],
  ] as const)('%s accepts the right signature and refuses others', async (op, algorithm, encoding) => {
    const good = mac(algorithm, HOOK_VALUE, text).digest(encoding);
    expect(await sign(op, { text, signature: good })).toEqual({ value: true });
    expect(await sign(op, { base64: Buffer.from(text).toString('base64'), signature: good })).toEqual({ value: true });
    for (const bad of [
      mac(algorithm, 'another-key', text).digest(encoding),
      mac(algorithm, HOOK_VALUE, text + ' ').digest(encoding),
      mac(algorithm === 'sha1' ? 'sha256' : 'sha1', HOOK_VALUE, text).digest(encoding),
      good.slice(0, -2),
      good + 'ab',
      '',
    ]) {
      expect(await sign(op, { text, signature: bad }), bad).toEqual({ value: false });
    }
  });

  it('builds signed headers: GitHub style, Stripe style, and base64 SHA-1', async () => {
    const body = '{"id":"evt_1"}';
    expect(await sign('signedHeader', { text: body, options: { header: 'X-Hub-Signature-256', prefix: 'sha256=' } })).toEqual({
      value: { 'X-Hub-Signature-256': `sha256=${mac('sha256', HOOK_VALUE, body).digest('hex')}` },
    });
    const t = 1_700_000_000;
    expect(await sign('signedHeader', { text: `${t}.${body}`, options: { header: 'Stripe-Signature', prefix: `t=${t},v1=` } })).toEqual({
      value: { 'Stripe-Signature': `t=${t},v1=${mac('sha256', HOOK_VALUE, `${t}.${body}`).digest('hex')}` },
    });
    expect(await sign('signedHeader', { text: body, options: { header: 'X-Signature', algorithm: 'sha1', encoding: 'base64' } })).toEqual({
      value: { 'X-Signature': mac('sha1', HOOK_VALUE, body).digest('base64') },
    });
  });

  it('refuses a header name or prefix that is not one, and an algorithm it does not offer', async () => {
    expect((await sign('signedHeader', { text: 'x', options: { header: 'X-Sig\r\nInjected: 1' } })).error).toMatchObject({ kind: 'TypeError', message: expect.stringMatching(/header must be a header name/) });
    expect((await sign('signedHeader', { text: 'x', options: { header: 'X-Sig', prefix: 'a\nb' } })).error).toMatchObject({ kind: 'TypeError' });
    expect((await sign('signedHeader', { text: 'x', options: { header: 'X-Sig', algorithm: 'md5' } })).error?.message).toMatch(/invalid arguments for secrets\.hmac: algorithm/);
  });

  it('refuses data over 8 MiB', async () => {
    expect((await sign('huge', {})).error?.message).toMatch(/invalid arguments for secrets\.hmac: data: data is larger than 8388608 bytes/);
  });
});

describe('who may use a secret', () => {
  it('refuses a service the secret does not list, an unknown name, and a secret listing no service', async () => {
    expect((await call('/intruder', { op: 'hmacSha256Hex', name: 'hook', text: 'x' })).error).toEqual({ kind: 'Forbidden', status: 403, message: "Secret 'hook' is not granted to service 'intruder'" });
    expect((await call('/signer', { op: 'hmacSha256Hex', name: 'other', text: 'x' })).error).toEqual({ kind: 'Forbidden', status: 403, message: "Secret 'other' is not granted to service 'signer'" });
    expect((await call('/signer', { op: 'hmacSha256Hex', name: 'nobody', text: 'x' })).error).toMatchObject({ kind: 'Forbidden', status: 403 });
    expect((await call('/signer', { op: 'verifyHmacSha256Hex', name: 'no-such', text: 'x', signature: 'ab' })).error).toEqual({ kind: 'NotFound', status: 404, message: "No secret named 'no-such'" });
  });

  it('answers ServiceUnavailable while a secret has no value', async () => {
    expect((await call('/signer', { op: 'hmacSha256Hex', name: 'unset', text: 'x' })).error).toEqual({ kind: 'ServiceUnavailable', status: 503, message: "Secret 'unset' has no value yet" });
  });

  it('lets an uncaught refusal reach the caller as its status', async () => {
    const res = await k.app.inject({ method: 'POST', url: '/raw', payload: { name: 'hook' } });
    bodies.push(res.body);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ result: 'Error', details: "Secret 'hook' is not granted to service 'raw'" });
  });

  it('follows config changes at once: a grant, a new value', async () => {
    const edited = CONFIG.replace('services: [intruder]', 'services: [intruder, signer]').replace(`value: ${OTHER_VALUE}`, `value: ${OTHER_VALUE}-2`);
    expect(await k.writeConfig(edited)).toBe(true);
    expect(await call('/signer', { op: 'hmacSha256Hex', name: 'other', text: 'x' })).toEqual({ value: mac('sha256', `${OTHER_VALUE}-2`, 'x').digest('hex') });
    expect(await k.writeConfig(CONFIG)).toBe(true);
    expect((await call('/signer', { op: 'hmacSha256Hex', name: 'other', text: 'x' })).error).toMatchObject({ kind: 'Forbidden' });
  });

  it('uses a value set through the control op at once', async () => {
    await k.kernel.runControl('secrets.set', { name: 'unset', value: CLI_VALUE, configValue: null });
    expect(await call('/signer', { op: 'hmacSha256Hex', name: 'unset', text: 'x' })).toEqual({ value: mac('sha256', CLI_VALUE, 'x').digest('hex') });
    await expect(k.kernel.runControl('secrets.set', { name: 'no-such', value: 'v', configValue: null })).rejects.toThrow(/no secret named 'no-such'/);
    const tooLong = await k.kernel.runControl('secrets.set', { name: 'unset', value: CLI_VALUE.repeat(200), configValue: null }).then(
      () => 'accepted',
      (err: Error) => err.message,
    );
    expect(tooLong).toMatch(/value/);
    expect(tooLong).not.toContain(CLI_VALUE);
  });
});

describe('the value stays on the host', () => {
  it('is nowhere in what the handle shows a service', async () => {
    const { value } = await sign('snoop', {});
    expect(JSON.stringify(value)).not.toContain(HOOK_VALUE);
    expect(value).toContain('hook');
  });

  it('is in no response, no log line and no file of the data directory in clear', () => {
    const secrets = [HOOK_VALUE, OTHER_VALUE, CLI_VALUE];
    const seen = [...bodies, ...logs.map((l) => JSON.stringify(l))];
    expect(bodies.length).toBeGreaterThan(20);
    expect(logs.some((l) => l.secret === 'unset')).toBe(true);
    for (const secret of secrets) for (const text of seen) expect(text).not.toContain(secret);
    const dataDir = join(k.dir, 'data');
    for (const file of readdirSync(dataDir).filter((f) => f.startsWith('svc.db'))) {
      const content = readFileSync(join(dataDir, file));
      for (const secret of secrets) expect(content.includes(Buffer.from(secret)), `${file} holds a value in clear`).toBe(false);
    }
  });
});
