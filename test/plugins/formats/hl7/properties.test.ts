import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { expectNoFault, fcParams, mutatedMany, oddText, post, randomBytes } from '../properties.ts';

/** Arbitrary bodies on an hl7 channel with an echo service in the sandbox: never a 5xx. */

const CONFIG = `
channel_rest:
  - { name: echo, url_path: /echo, service: echo, security: none, data_format: hl7 }
`;
const SERVICES = { 'echo.js': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ctx.payload });` };

const CORPUS_DIR = join(import.meta.dirname, '../../../fixtures/hl7');
const corpus = readdirSync(CORPUS_DIR)
  .filter((f) => f.endsWith('.hl7'))
  .map((f) => readFileSync(join(CORPUS_DIR, f)));

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES });
});
afterAll(() => k?.close());

const HL7_TYPE = 'x-application/hl7-v2+er7';
const SINGLE_BYTE = /^(?:8859\/1|ASCII)$/;

/** Delimiters: a field separator and four distinct encoding characters, none alphanumeric (nor `/`, which 8859/1 holds). */
const delimiters = fc
  .uniqueArray(fc.constantFrom(...'|^~\\&#!$*+:;=?@_{}'.split('')), { minLength: 5, maxLength: 5 })
  .map(([field, component, repetition, escapeChar, subcomponent]) => ({ field: field!, encoding: component! + repetition! + escapeChar! + subcomponent! }));

/** Field text that avoids the delimiters and line breaks (the writer would escape them, changing the bytes). */
function plainText(forbidden: string, latin1: boolean): fc.Arbitrary<string> {
  const unit = latin1 ? fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)) : fc.oneof(fc.constantFrom('a', 'Z', '0', ' ', 'é', 'ß', '€', '😀', '中', '\t'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }));
  return fc.string({ unit, maxLength: 12 }).map((s) => [...s].filter((c) => !forbidden.includes(c) && c !== '\r' && c !== '\n').join(''));
}

const segmentName = fc.stringMatching(/^[A-Z][A-Z0-9]{2}$/).filter((n) => n !== 'MSH' && n !== 'FHS' && n !== 'BHS' && n !== 'BTS' && n !== 'FTS');

/** A message as bytes in the charset its MSH-18 names. */
const message = fc
  .record({
    delimiters,
    charset: fc.constantFrom('', '8859/1', 'ASCII', 'UNICODE UTF-8'),
    separator: fc.constantFrom('\r', '\n', '\r\n'),
    trailing: fc.boolean(),
  })
  .chain(({ delimiters: d, charset, separator, trailing }) => {
    const latin1 = SINGLE_BYTE.test(charset);
    const text = plainText(d.field + d.encoding, latin1);
    const field = fc.array(fc.array(fc.array(text, { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 2 });
    const segment = fc.tuple(segmentName, fc.array(field, { minLength: 1, maxLength: 6 }));
    return fc.tuple(fc.array(segment, { maxLength: 5 }), text).map(([segments, sender]) => {
      const [comp, rep, , sub] = d.encoding;
      const writeField = (f: string[][][]) => f.map((r) => r.map((c) => c.join(sub)).join(comp)).join(rep);
      const msh = `MSH${d.field}${d.encoding}${d.field}${sender}${d.field}FAC${d.field}${d.field}${d.field}20240101${d.field}${d.field}ADT${comp}A01${d.field}ID1${d.field}P${d.field}2.5${d.field.repeat(6)}${charset}`;
      const lines = [msh, ...segments.map(([name, fields]) => [name, ...fields.map(writeField)].join(d.field))];
      const textOut = lines.join(separator) + (trailing ? separator : '');
      return { bytes: Buffer.from(textOut, latin1 ? 'latin1' : 'utf8'), latin1 };
    });
  });

describe('hl7 channel properties', () => {
  it('random bytes never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(randomBytes, fc.boolean(), async (body, asMessage) => {
        expectNoFault(await post(k, '/echo', body, HL7_TYPE));
        if (asMessage) expectNoFault(await post(k, '/echo', Buffer.concat([Buffer.from('MSH|^~\\&|'), body])));
      }),
      fcParams(),
    );
  });

  it('odd text in fields never gives a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(oddText, fc.constantFrom('', '8859/1', 'ASCII', 'UNICODE UTF-8'), async (text, charset) => {
        const msg = `MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5||||||${charset}\rPID|1||${text}||${text}^${text}\rNTE|1||\\X${Buffer.from(text).toString('hex')}\\\r`;
        expectNoFault(await post(k, '/echo', Buffer.from(msg, SINGLE_BYTE.test(charset) ? 'latin1' : 'utf8')));
        expectNoFault(await post(k, '/echo', text));
      }),
      fcParams(),
    );
  });

  it('every message it accepts is echoed byte for byte, in the charset MSH-18 names', async () => {
    await fc.assert(
      fc.asyncProperty(message, async ({ bytes, latin1 }) => {
        const sent = await post(k, '/echo', bytes, HL7_TYPE);
        expectNoFault(sent);
        expect(sent.res.statusCode, sent.res.body).toBe(200);
        expect(sent.res.headers['content-type']).toBe(`${HL7_TYPE}; charset=${latin1 ? 'iso-8859-1' : 'utf-8'}`);
        expect(sent.res.rawPayload.equals(bytes), `${JSON.stringify(bytes.toString('latin1'))} → ${JSON.stringify(sent.res.rawPayload.toString('latin1'))}`).toBe(true);
      }),
      fcParams(),
    );
  });

  it('mutated messages never give a 5xx', async () => {
    const framed = (b: Buffer) => fc.constantFrom(b, Buffer.concat([Buffer.from([0x0b]), b, Buffer.from([0x1c, 0x0d])]), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), b]));
    const source = fc.oneof(fc.constantFrom(...corpus), message.map((m) => m.bytes)).chain(framed);
    await fc.assert(
      fc.asyncProperty(
        source.chain((b) => mutatedMany(b)),
        async (body) => expectNoFault(await post(k, '/echo', body)),
      ),
      fcParams(),
    );
  });

  it('a long run of anything where a delimiter or a name belongs never makes a long error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 100_000 }), fc.constantFrom('MSH|', 'MSH|^~\\&|A\r', 'MSH|^~\\&|A\rPI', ''), fc.constantFrom('X', '^', '\\'), async (length, head, filler) => {
        expectNoFault(await post(k, '/echo', `${head}${filler.repeat(length)}|1\r`, HL7_TYPE));
      }),
      fcParams(40),
    );
  });
});
