import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { expectNoFault, fcParams, mutatedMany, oddText, post, randomBytes } from '../properties.ts';

/** Arbitrary bodies, content types and boundaries on a multipart channel with an echo service in the sandbox: never a 5xx. */

const CONFIG = `
channel_rest:
  - { name: echo, url_path: /echo, service: echo, security: none, data_format: multipart, multipart: { max_files: 3, max_fields: 5, max_file_bytes: 2000, max_field_bytes: 500, max_total_bytes: 4000 } }
`;
const SERVICES = {
  'echo.js': `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => ({ payload: ctx.payload ?? null, files: ctx.files.map((f) => ({ field: f.field, filename: f.filename, contentType: f.contentType, size: f.content.length })) }) });`,
};

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES });
});
afterAll(() => k?.close());

/** RFC 2046 boundary characters, 1 to 70 of them, not ending in a space. */
const boundary = fc
  .string({ unit: fc.constantFrom(...("abcXYZ0189'()+_,-./:=? ").split('')), minLength: 1, maxLength: 70 })
  .filter((b) => !b.endsWith(' '));

const contentType = fc.oneof(
  boundary.map((b) => `multipart/form-data; boundary="${b}"`),
  fc.string({ maxLength: 80 }).map((s) => `multipart/form-data; boundary=${s}`),
  fc.constantFrom('multipart/form-data', 'multipart/form-data; boundary=', 'multipart/mixed; boundary=x', 'text/plain', 'MULTIPART/FORM-DATA; BOUNDARY=x', 'multipart/form-data; boundary=x; boundary=y', ''),
  oddText.map((s) => `multipart/form-data; boundary=${s.replace(/[\r\n]/g, '')}`),
);

interface Part {
  name: string;
  filename: string | undefined;
  type: string | undefined;
  content: Buffer;
}

const headerSafe = oddText.map((s) => s.replace(/[\r\n"]/g, ''));
const part: fc.Arbitrary<Part> = fc.record({
  name: fc.oneof(headerSafe, fc.constantFrom('a', 'a[]', '__proto__', 'constructor', 'x'.repeat(300))),
  filename: fc.option(fc.oneof(headerSafe, fc.constantFrom('C:\\Users\\x\\a.txt', '../../etc/passwd', 'é.pdf', '')), { nil: undefined }),
  type: fc.option(fc.constantFrom('text/plain', 'application/octet-stream', 'image/png; charset=binary', 'x'), { nil: undefined }),
  content: fc.oneof(fc.uint8Array({ maxLength: 600 }).map((a) => Buffer.from(a)), fc.integer({ min: 0, max: 3000 }).map((n) => Buffer.alloc(n, 0x61))),
});

function body(b: string, parts: Part[], closed: boolean): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${b}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    if (p.type !== undefined) head += `\r\nContent-Type: ${p.type}`;
    chunks.push(Buffer.from(`${head}\r\n\r\n`, 'utf8'), p.content, Buffer.from('\r\n'));
  }
  if (closed) chunks.push(Buffer.from(`--${b}--\r\n`));
  return Buffer.concat(chunks);
}

describe('multipart channel properties', () => {
  it('random bytes under any content type never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(randomBytes, contentType, async (bytes, type) => expectNoFault(await post(k, '/echo', bytes, type))),
      fcParams(),
    );
  });

  it('well-formed bodies with any parts and boundary are read, or refused with a 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(boundary, fc.array(part, { maxLength: 6 }), async (b, parts) => {
        const sent = await post(k, '/echo', body(b, parts, true), `multipart/form-data; boundary="${b}"`);
        expectNoFault(sent);
        if (sent.res.statusCode === 200) {
          const files = (sent.res.json() as { files: Array<{ size: number }> }).files;
          expect(files.length).toBeLessThanOrEqual(3);
        }
      }),
      fcParams(),
    );
  });

  it('a plain form with small fields under the limits is read whole', async () => {
    const field = fc.tuple(fc.stringMatching(/^[a-z]{1,8}$/), fc.string({ maxLength: 50 }).map((s) => s.replace(/[\uD800-\uDFFF]/g, '')));
    await fc.assert(
      fc.asyncProperty(boundary, fc.uniqueArray(field, { maxLength: 5, selector: ([n]) => n }), async (b, fields) => {
        const parts = fields.map(([name, value]) => ({ name, filename: undefined, type: undefined, content: Buffer.from(value) }));
        const sent = await post(k, '/echo', body(b, parts, true), `multipart/form-data; boundary="${b}"`);
        expectNoFault(sent);
        expect(sent.res.statusCode, sent.res.body).toBe(200);
        expect((sent.res.json() as { payload: unknown }).payload).toEqual(Object.fromEntries(fields));
      }),
      fcParams(),
    );
  });

  it('truncated, unclosed and mutated bodies never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(boundary, fc.array(part, { minLength: 1, maxLength: 4 }), fc.boolean()).chain(([b, parts, closed]) => fc.tuple(fc.constant(b), mutatedMany(body(b, parts, closed)))),
        async ([b, bytes]) => expectNoFault(await post(k, '/echo', bytes, `multipart/form-data; boundary="${b}"`)),
      ),
      fcParams(),
    );
  });

  it('a long content type or file name never makes a long error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 12_000 }), async (length) => {
        expectNoFault(await post(k, '/echo', 'x', `text/${'p'.repeat(length)}`));
        const file = { name: 'f', filename: 'n'.repeat(length), type: undefined, content: Buffer.alloc(2001, 0x61) };
        const sent = await post(k, '/echo', body('b', [file], true), 'multipart/form-data; boundary=b');
        expectNoFault(sent);
        expect(sent.res.statusCode).toBe(413);
      }),
      fcParams(30),
    );
  });
});
