import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outgoingPaths } from '../../../../cli/testing/fakes.ts';
import { startTestEngine, type TestEngine } from '../../../../cli/testing/harness.ts';
import { testService } from '../../../../sdk/testing/index.ts';

/** `svc test` fakes of SFTP connections: an in-memory folder a test preloads and inspects. */
const dir = mkdtempSync(join(tmpdir(), 'svc-testing-sftp-'));
const MOVER = `import { service, sftp } from 'svc/sdk';
export default service({
  async POST(ctx) {
    const partner = sftp(ctx.payload.connection ?? 'partner');
    const names = (await partner.list('in')).map((e) => e.name);
    const text = await partner.get('in/' + names[0]);
    await partner.mkdir('done');
    await partner.put('done/' + names[0], text.toUpperCase(), { overwrite: false });
    await partner.delete('in/' + names[0]);
    try { await partner.get('../etc/passwd'); } catch (e) { return { names, refused: e.kind }; }
    return { names };
  },
});
`;

let engine: TestEngine;
let close: () => Promise<void>;
beforeAll(async () => {
  writeFileSync(join(dir, 'mover.ts'), MOVER);
  ({ engine, close } = await startTestEngine(outgoingPaths([])));
  engine.testFile = join(dir, 'mover.test.ts');
  (globalThis as unknown as Record<symbol, unknown>)[Symbol.for('svc.testing')] = { engine, tests: [], prefix: [] };
});
afterAll(async () => {
  await close?.();
  rmSync(dir, { recursive: true, force: true });
});

describe('svc test: sftp fakes', () => {
  it('gives the service an in-memory folder, preloaded, with the production path rules, and shows what it left', async () => {
    const mover = testService('mover', { sftp: { partner: { files: { 'in/a.csv': 'a;1\n' } } } });
    const res = await mover.post({}, { payload: {} });
    expect(res.error).toBeUndefined();
    expect(res.body).toEqual({ names: ['a.csv'], refused: 'BadRequest' });
    expect(Object.keys(mover.sftpFiles('partner'))).toEqual(['done/a.csv']);
    expect(Buffer.from(mover.sftpFiles('partner')['done/a.csv']!).toString()).toBe('A;1\n');
  });

  it('answers Conflict as production does, and fails the call clearly for a connection with no fake', async () => {
    const mover = testService('mover', { sftp: { partner: { files: { 'in/a.csv': 'x', 'done/a.csv': 'old' } } } });
    const res = await mover.post({}, { payload: {} });
    expect(res.status).toBe(409);
    expect(Buffer.from(mover.sftpFiles('partner')['done/a.csv']!).toString()).toBe('old');
    await expect(testService('mover', { sftp: { partner: {} } }).post({}, { payload: { connection: 'other' } })).rejects.toThrow(/SFTP connection 'other', which has no fake/);
  });

  it('answers PayloadTooLarge (413) past maxFileBytes, and serves a file of exactly that size', async () => {
    const tooBigToRead = await testService('mover', { sftp: { partner: { files: { 'in/a.csv': '12345' }, maxFileBytes: 4 } } }).post({}, { payload: {} });
    expect(tooBigToRead.status).toBe(413);
    expect(tooBigToRead.error).toMatchObject({ kind: 'PayloadTooLarge', message: "'in/a.csv' is 5 bytes, over the limit of 4" });
    const mover = testService('mover', { sftp: { partner: { files: { 'in/a.csv': '1234' }, maxFileBytes: 4 } } });
    expect((await mover.post({}, { payload: {} })).status).toBe(200);
  });
});
