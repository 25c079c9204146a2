import { mkdtempSync, writeFileSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestKernel } from '../../../helpers/kernel.ts';
import { json, Upstream } from '../../outgoing/rest/upstream.ts';

/**
 * A counting upstream: every run of the RECORD service posts what it got (file headers, payload,
 * raw content, source) to it, so the tests count runs by what a real HTTP server heard.
 */
export async function counter(): Promise<Upstream> {
  return new Upstream().route('/hit', (_req, res) => json(res, 200, { ok: true })).start();
}

export interface Heard {
  name: string;
  path: string;
  size: string;
  payload: unknown;
  raw: string;
  source: { kind: string; name: string; at: string };
  attempt: number;
}

export function heard(up: Upstream): Heard[] {
  return up.hits('/hit').map((h) => JSON.parse(h.body) as Heard);
}

export const outgoingCounter = (up: Upstream) => `outgoing_rest:\n  - { name: counter, address: "http://127.0.0.1:${up.port}", url_path: /hit, timeout_ms: 10000 }\n`;

/** Posts what the run got; fails (permanently) for files whose name holds 'fail'. */
export const RECORD = `import { service, BadRequest, outgoing } from 'svc/sdk';
export default service({
  async handle(ctx) {
    const h = ctx.headers;
    await outgoing('counter').post(ctx.cid, { payload: { name: h['file-name'], path: h['file-path'], size: h['file-size'], payload: ctx.payload ?? null, raw: ctx.rawBody.length > 65536 ? '(' + ctx.rawBody.length + ' bytes)' : ctx.rawBody, source: ctx.delivery?.source, attempt: ctx.delivery?.attempt } });
    if (h['file-name'].includes('fail')) throw new BadRequest('refused ' + h['file-name']);
    return {};
  },
});
`;

export function tmpFolder(prefix = 'pickup'): string {
  return mkdtempSync(join(tmpdir(), `svc-${prefix}-`));
}

/** Writes a file with an mtime in the past, so it looks finished to a size/mtime check. */
export function drop(dir: string, name: string, content: string | Buffer, ageS = 60): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  const t = Date.now() / 1000 - ageS;
  utimesSync(path, t, t);
  return path;
}

export function poll(k: TestKernel, channel: string): Promise<{ listed: number; taken: number; moved: number; error?: string }> {
  return k.kernel.runControl('file.poll', { channel }) as Promise<{ listed: number; taken: number; moved: number; error?: string }>;
}

export async function deadLetters(k: TestKernel, channel: string): Promise<Array<{ id: number; lastError: { kind: string; message: string } | null }>> {
  return (await k.kernel.runControl('queue.list', { channel: `file:${channel}`, state: 'dead', limit: 100 })) as Array<{ id: number; lastError: { kind: string; message: string } | null }>;
}
