import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { expectNoFault, fcParams, mutatedMany, oddText, post, randomBytes } from '../properties.ts';

/** Arbitrary bodies on csv channels with an echo service in the sandbox: never a 5xx; tables written by the plugin read back the same. */

const CONFIG = `
channel_rest:
  - { name: echo, url_path: /echo, service: echo, security: none, data_format: csv, csv: { escape_formulas: false } }
  - { name: rows, url_path: /rows, service: echo, security: none, data_format: csv, csv: { header: false, relax_column_count: true, escape_formulas: false } }
  - { name: latin, url_path: /latin, service: echo, security: none, data_format: csv, csv: { encoding: latin1, delimiter: ';', cast: true } }
`;
// The records go back as they came: the reader's output must be writable CSV.
const SERVICES = { 'echo.js': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ctx.payload ?? [] });` };

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES });
});
afterAll(() => k?.close());

const quoteField = (s: string) => `"${s.replaceAll('"', '""')}"`;
const cellText = fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => s.replace(/\uFEFF/g, ''));
const table = fc
  .tuple(fc.uniqueArray(fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9_ -]{0,8}$/), { minLength: 1, maxLength: 5 }), fc.integer({ min: 0, max: 8 }))
  .chain(([header, count]) => fc.tuple(fc.constant(header), fc.array(fc.array(cellText, { minLength: header.length, maxLength: header.length }), { minLength: count, maxLength: count })));

describe('csv properties', () => {
  it('random bytes and odd text never give a 5xx', async () => {
    for (const url of ['/echo', '/rows', '/latin']) {
      await fc.assert(
        fc.asyncProperty(fc.oneof(randomBytes, oddText.map((t) => Buffer.from(t, 'utf8'))), async (body) => expectNoFault(await post(k, url, body, 'text/csv'))),
        fcParams(60),
      );
    }
  });

  it('a UTF-8 BOM on a latin1 channel, with text latin1 cannot carry, echoed back: no 5xx (a counterexample fast-check found)', async () => {
    const posted = await post(k, '/latin', Buffer.from([239, 187, 191, 0, 10, 226, 128, 168]), 'text/csv');
    expectNoFault(posted);
    expect(posted.res.headers['content-type']).toBe('text/csv; charset=utf-8');
  });

  it('a table with quoted cells (quotes, delimiters, line breaks, any Unicode) reads back as the same table', async () => {
    await fc.assert(
      fc.asyncProperty(table, async ([header, rows]) => {
        const text = [header.join(','), ...rows.map((r) => r.map(quoteField).join(','))].map((l) => `${l}\r\n`).join('');
        const { res } = await post(k, '/echo', text, 'text/csv');
        expect(res.statusCode, res.body).toBe(200);
        // Written back by the plugin: the same records, whatever quoting it chose.
        const back = await post(k, '/echo', res.body, 'text/csv');
        expect(back.res.body).toBe(res.body);
        if (rows.length) expect(res.body.split('\r\n')[0]).toBe(header.map((h) => (h !== h.trim() ? quoteField(h) : h)).join(','));
      }),
      fcParams(),
    );
  });

  it('mutated tables never give a 5xx', async () => {
    const doc = 'id,name,note\r\n1,"Zoë ""Z""","a,b"\r\n2,Bob,"two\nlines"\r\n';
    await fc.assert(
      fc.asyncProperty(mutatedMany(doc), async (body) => {
        for (const url of ['/echo', '/rows', '/latin']) expectNoFault(await post(k, url, body, 'text/csv'));
      }),
      fcParams(),
    );
  });
});
