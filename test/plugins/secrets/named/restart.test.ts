import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

const CONFIG = `
secrets:
  - { name: hook, services: [signer] }
channel_rest:
  - { name: signer, url_path: /sign, service: signer, method: POST, data_format: none, security: none }
`;
const SIGNER = {
  'signer.ts': `import { secret, service } from 'svc/sdk';
export default service({ POST: async (ctx) => { try { return { sig: await secret('hook').hmacSha256Hex(ctx.rawBody) }; } catch (e) { return { error: e.kind + ' ' + e.message }; } } });
`,
};
const VALUE = 'restart-value-0d15ea5e';

const dir = mkdtempSync(join(tmpdir(), 'svc-named-restart-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function sign(k: TestKernel): Promise<unknown> {
  return (await k.app.inject({ method: 'POST', url: '/sign', payload: 'body' })).json();
}

describe('named secrets across restarts', () => {
  it('keep a CLI-set value; under another vault key the value is reported unreadable, and setting it again recovers', async () => {
    const first = await startKernel({ config: CONFIG, services: SIGNER, dir });
    await first.kernel.runControl('secrets.set', { name: 'hook', value: VALUE, configValue: null });
    await first.close();

    const again = await startKernel({ config: CONFIG, services: SIGNER, dir });
    expect(await sign(again)).toEqual({ sig: createHmac('sha256', VALUE).update('body').digest('hex') });
    await again.close();

    writeFileSync(join(dir, 'data', 'vault.key'), randomBytes(32).toString('base64') + '\n');
    const logs: Array<Record<string, unknown>> = [];
    const rekeyed = await startKernel({ config: CONFIG, services: SIGNER, dir, logs });
    try {
      expect(logs.filter((l) => l.secret === 'hook').map((l) => l.msg)).toEqual([expect.stringMatching(/cannot be decrypted.*svc secret set hook/)]);
      expect(await sign(rekeyed)).toEqual({ error: "ServiceUnavailable Secret 'hook' has no value yet" });
      await rekeyed.kernel.runControl('secrets.set', { name: 'hook', value: 'new-value', configValue: null });
      expect(await sign(rekeyed)).toEqual({ sig: createHmac('sha256', 'new-value').update('body').digest('hex') });
      expect(JSON.stringify(logs)).not.toContain(VALUE);
    } finally {
      await rekeyed.close();
    }
  });
});
