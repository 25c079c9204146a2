import fc from 'fast-check';
import { expect } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import type { TestKernel } from '../../helpers/kernel.ts';

/**
 * What every property test of a format checks through a real kernel: whatever the body, the
 * answer is never a 5xx, every answer carries a CID, and every refusal is a 4xx with the error
 * body `{result: 'Error', cid, details}` whose cid is the X-Svc-CID header. fast-check prints the
 * seed and the shrunk counterexample of a failure; `FC_SEED` replays it.
 */

export const RUNS = Number(process.env.FC_RUNS ?? 150);

export function fcParams(numRuns = RUNS): fc.Parameters<unknown> {
  const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
  return { numRuns, ...(seed === undefined ? {} : { seed }) };
}

export interface Posted {
  res: LightMyRequestResponse;
  body: Buffer;
}

export async function post(k: TestKernel, url: string, body: Buffer | string, contentType?: string): Promise<Posted> {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const headers: Record<string, string> = {};
  if (contentType !== undefined) headers['content-type'] = contentType;
  const res = await k.app.inject({ method: 'POST', url, payload: bytes, headers });
  return { res, body: bytes };
}

/** No 5xx; a CID on every answer; a refusal is a 4xx carrying the standard error body. */
export function expectNoFault({ res, body }: Posted): void {
  const cid = res.headers['x-svc-cid'];
  const where = `${res.statusCode} for ${body.length} bytes ${JSON.stringify(body.subarray(0, 200).toString('latin1'))}: ${res.body.slice(0, 300)}`;
  expect(res.statusCode, where).toBeLessThan(500);
  expect(cid, where).toMatch(/^[0-9a-f]{22}$/);
  if (res.statusCode >= 400) {
    const error = res.json() as Record<string, unknown>;
    expect(error, where).toEqual({ result: 'Error', cid, details: expect.any(String) });
    expect((error.details as string).length, where).toBeLessThan(1000);
  }
}

/** Random bytes, often near what a parser expects (ASCII) and sometimes not at all. */
export const randomBytes = fc.oneof(
  fc.uint8Array({ maxLength: 2048 }).map((a) => Buffer.from(a)),
  fc.string({ unit: 'binary-ascii', maxLength: 512 }).map((s) => Buffer.from(s, 'latin1')),
);

/** Text with what breaks naive code: lone surrogates, NUL, BOM, combining marks, RTL, astral planes. */
export const oddText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\uFEFF', '\uD800', '\uDFFF', '\u0301', '\u202E', '😀', '\u2028', 'é', '\r', '\n', '"', '\\', '<', '&', '%', '|', '^'), maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
);

/** A mutation of a valid document: a byte dropped, changed, inserted, a slice repeated or cut off. */
export function mutated(doc: string | Buffer): fc.Arbitrary<Buffer> {
  const bytes = typeof doc === 'string' ? Buffer.from(doc, 'utf8') : doc;
  const n = bytes.length;
  const at = fc.nat({ max: Math.max(0, n - 1) });
  return fc.oneof(
    fc.tuple(at).map(([i]) => Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + 1)])),
    fc.tuple(at, fc.integer({ min: 0, max: 255 })).map(([i, b]) => Buffer.concat([bytes.subarray(0, i), Buffer.from([b]), bytes.subarray(i + 1)])),
    fc.tuple(at, fc.uint8Array({ minLength: 1, maxLength: 8 })).map(([i, a]) => Buffer.concat([bytes.subarray(0, i), Buffer.from(a), bytes.subarray(i)])),
    fc.tuple(at, at).map(([i, j]) => Buffer.concat([bytes.subarray(0, Math.max(i, j)), bytes.subarray(Math.min(i, j))])),
    fc.tuple(at).map(([i]) => bytes.subarray(0, i)),
  );
}

/** Several mutations in a row of one document. */
export function mutatedMany(doc: string | Buffer, times = 3): fc.Arbitrary<Buffer> {
  let arb: fc.Arbitrary<Buffer> = mutated(doc);
  for (let i = 1; i < times; i++) arb = arb.chain((d) => mutated(d));
  return arb;
}
