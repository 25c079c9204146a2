import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MultipartError, parseMultipart, type MultipartLimits } from '../../../../plugins/formats/multipart/codec.ts';
import multipartPlugin from '../../../../plugins/formats/multipart/plugin.ts';
import { SvcError } from '../../../../kernel/errors.ts';
import { channelOf, hasStep, parseWith } from '../support.ts';

const LIMITS: MultipartLimits = { maxFileBytes: 1024, maxFiles: 3, maxFields: 3, maxTotalBytes: 2048, maxFieldBytes: 64 };

/** A body exactly as a browser (undici's FormData) would send it. */
async function encode(parts: Array<[string, string | Blob, string?]>): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, value, filename);
  }
  const res = new Response(form);
  return { body: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get('content-type')! };
}

/** A hand-written body, for what FormData cannot produce. */
function raw(parts: string[], boundary = 'XyZ'): { body: Buffer; contentType: string } {
  const body = parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('') + `--${boundary}--\r\n`;
  return { body: Buffer.from(body, 'utf8'), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function failure(p: Promise<unknown>): Promise<MultipartError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MultipartError);
  return err as MultipartError;
}

describe('multipart reading', () => {
  it('gives binary files back byte-exact with name, filename and content type', async () => {
    const bytes = randomBytes(1000);
    bytes[0] = 0x0d;
    bytes[1] = 0x0a; // CR LF inside content must not be mistaken for a boundary
    const { body, contentType } = await encode([
      ['title', 'scan'],
      ['doc', new Blob([bytes], { type: 'image/png' }), 'scan.png'],
    ]);
    const { fields, files } = await parseMultipart(body, contentType, LIMITS);
    expect(fields).toEqual({ title: 'scan' });
    expect(files).toHaveLength(1);
    expect(files[0]).toMatchObject({ field: 'doc', filename: 'scan.png', contentType: 'image/png' });
    expect(files[0]!.content.equals(bytes)).toBe(true);
  });

  it('keeps several files and repeated fields, in order', async () => {
    const { body, contentType } = await encode([
      ['tag', 'a'],
      ['f', new Blob(['one']), 'a.txt'],
      ['tag', 'b'],
      ['f', new Blob(['two'], { type: 'text/plain' }), 'b.txt'],
      ['ids[]', '1'],
    ]);
    const { fields, files } = await parseMultipart(body, contentType, LIMITS);
    expect(fields).toEqual({ tag: ['a', 'b'], ids: ['1'] });
    expect(files.map((f) => [f.field, f.filename, f.content.toString()])).toEqual([
      ['f', 'a.txt', 'one'],
      ['f', 'b.txt', 'two'],
    ]);
  });

  it('reads non-ASCII file names, raw UTF-8 or RFC 5987 encoded', async () => {
    const { body, contentType } = await encode([['f', new Blob(['x']), 'résumé 😀.pdf']]);
    expect((await parseMultipart(body, contentType, LIMITS)).files[0]!.filename).toBe('résumé 😀.pdf');
    const ext = raw([`Content-Disposition: form-data; name="f"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf\r\nContent-Type: application/pdf\r\n\r\n%PDF`]);
    expect((await parseMultipart(ext.body, ext.contentType, LIMITS)).files[0]).toMatchObject({ filename: 'résumé.pdf', contentType: 'application/pdf' });
  });

  it('strips client paths from file names', async () => {
    const r = raw(['Content-Disposition: form-data; name="f"; filename="C:\\\\Users\\\\ann\\\\secret.txt"\r\n\r\nx', 'Content-Disposition: form-data; name="g"; filename="../../etc/passwd"\r\n\r\ny']);
    expect((await parseMultipart(r.body, r.contentType, LIMITS)).files.map((f) => f.filename)).toEqual(['secret.txt', 'passwd']);
  });

  it('skips the empty part of a file input left blank, but keeps a named empty file', async () => {
    const r = raw([
      'Content-Disposition: form-data; name="blank"; filename=""\r\nContent-Type: application/octet-stream\r\n\r\n',
      'Content-Disposition: form-data; name="empty"; filename="empty.txt"\r\n\r\n',
    ]);
    const { files } = await parseMultipart(r.body, r.contentType, LIMITS);
    expect(files.map((f) => [f.field, f.filename, f.content.length])).toEqual([['empty', 'empty.txt', 0]]);
  });

  it('treats a part with content type octet-stream and no filename as a file', async () => {
    const r = raw(['Content-Disposition: form-data; name="blob"\r\nContent-Type: application/octet-stream\r\n\r\n\x00\x01']);
    const { fields, files } = await parseMultipart(r.body, r.contentType, LIMITS);
    expect(fields).toEqual({});
    expect(files[0]).toMatchObject({ field: 'blob', filename: '' });
  });

  it('accepts files and fields exactly at every limit', async () => {
    const { body, contentType } = await encode([
      ['a', 'x'.repeat(64)],
      ['b', '1'],
      ['c', '2'],
      ['f1', new Blob([Buffer.alloc(1024)]), '1'],
      ['f2', new Blob([Buffer.alloc(1024)]), '2'],
    ]);
    const { files } = await parseMultipart(body, contentType, LIMITS);
    expect(files.map((f) => f.content.length)).toEqual([1024, 1024]);
  });
});

describe('multipart limits and bad bodies', () => {
  const over: Array<[string, Array<[string, string | Blob, string?]>, RegExp]> = [
    ['a file one byte over max_file_bytes', [['f', new Blob([Buffer.alloc(1025)]), 'big.bin']], /file "big.bin" is larger than 1024 bytes/],
    ['more files than max_files', [1, 2, 3, 4].map((i) => ['f', new Blob(['x']), `${i}.txt`] as [string, Blob, string]), /more than 3 files/],
    ['more fields than max_fields', [['a', '1'], ['b', '2'], ['c', '3'], ['d', '4']], /more than 3 fields/],
    ['a field one byte over max_field_bytes', [['a', 'x'.repeat(65)]], /field "a" is larger than 64 bytes/],
    [
      'files together over max_total_bytes',
      [
        ['f', new Blob([Buffer.alloc(1000)]), '1'],
        ['f', new Blob([Buffer.alloc(1000)]), '2'],
        ['f', new Blob([Buffer.alloc(100)]), '3'],
      ],
      /files together exceed 2048 bytes/,
    ],
  ];
  for (const [label, parts, why] of over) {
    it(`refuses ${label} as too large`, async () => {
      const { body, contentType } = await encode(parts);
      const err = await failure(parseMultipart(body, contentType, LIMITS));
      expect(err.kind).toBe('too_large');
      expect(err.message).toMatch(why);
    });
  }

  it('refuses an overlong field name as too large', async () => {
    const ok = raw([`Content-Disposition: form-data; name="${'n'.repeat(200)}"\r\n\r\nx`]);
    expect(Object.keys((await parseMultipart(ok.body, ok.contentType, LIMITS)).fields)[0]).toHaveLength(200);
    for (const part of [`name="${'n'.repeat(201)}"\r\n\r\nx`, `name="${'é'.repeat(101)}"; filename="a"\r\n\r\nx`]) {
      const r = raw([`Content-Disposition: form-data; ${part}`]);
      expect((await failure(parseMultipart(r.body, r.contentType, LIMITS))).message).toMatch(/field name is longer than 200 bytes/);
    }
  });

  it('refuses a body cut short', async () => {
    const { body, contentType } = await encode([['f', new Blob(['hello']), 'a.txt']]);
    const err = await failure(parseMultipart(body.subarray(0, body.length - 10), contentType, LIMITS));
    expect(err).toMatchObject({ kind: 'malformed', message: 'Unexpected end of form' });
  });

  it('refuses a body that leaves a file part open after a closing boundary (it hung the request)', async () => {
    // A mutated body from the property test (fast-check seed 1888733642): busboy 1.6 takes its
    // closing delimiter, opens a file part after it and waits for that part's end forever.
    const body = Buffer.from(
      [
      'LS0sXyswOjBhLS0sLS0sXyswOjBhLS0sXyswOjBhDQpDb250ZW50LURpc3Bvc2l0aW9uOiBmb3JtLWRhdGE7IG5hbWU9ImNv',
      'bnN0cnVjdG9yIg0KDQoGwi/oDQotLSxfKzA6MGENCkNvbnRlbnQtRGlzcG9zaXRpb246IGZvcm0tZGF0YTsgbmFtZT0i8Jao',
      'o/CTj73wr6eK8J2FmPCdhaXwnYWv6pue4pqFIjsgZmlsZW5hbWU9IiINCkNvbnQtLSxfKzA6MGEtLSwtLSxfKzA6MGEtLSxf',
      'KzA6MGENCkNvbnRlbnQtRGlzcG9zaXRpb246IGZvcm0tZGF0YTsgbmFtZT0iY29uc3RydWN0b3IiDQoNCgbCL+gNCi0tLF8r',
      'MDowYQ0KQ29udGVudC1EaXNwb3NpdGlvbjogZm9ybS1kYXRhOyBuYW1lPSLwlqij8JOPvfCvp4rwnYWY8J2FpfCdha/qm57i',
      'moUiOyBmaWxlbmFtZT0iIg0KQ29udGVudC1UeXBlOiBhcHBsaWNhdGlvbi9vY3RldC1zdHJlYW0NCg0KX/cNCg==',
    ].join(''),
      'base64',
    );
    const err = await failure(parseMultipart(body, 'multipart/form-data; boundary=",_+0:0a"', LIMITS));
    expect(err).toMatchObject({ kind: 'malformed', message: 'a part is left open after the closing boundary' });
  });

  it('refuses a body that is not multipart at all', async () => {
    const err = await failure(parseMultipart(Buffer.from('name=ann'), 'multipart/form-data; boundary=abc', LIMITS));
    expect(err).toMatchObject({ kind: 'malformed', message: 'Unexpected end of form' });
  });

  it('refuses a content type without boundary', async () => {
    const { body } = await encode([['a', '1']]);
    expect(await failure(parseMultipart(body, 'multipart/form-data', LIMITS))).toMatchObject({ kind: 'malformed', message: 'Multipart: Boundary not found' });
  });

  it('refuses other content types as unsupported', async () => {
    for (const ct of [undefined, 'application/json', 'multipart/mixed; boundary=x', 'text/plain']) {
      const err = await failure(parseMultipart(Buffer.from('x'), ct, LIMITS));
      expect(err.kind).toBe('media_type');
    }
  });

  it('refuses a part without a field name (it was a 500)', async () => {
    for (const part of ['Content-Disposition: form-data; name=""\r\n\r\nx', 'Content-Disposition: form-data\r\n\r\nx', 'Content-Disposition: form-data; name=""; filename="a.txt"\r\n\r\nx']) {
      const { body, contentType } = raw([part]);
      expect(await failure(parseMultipart(body, contentType, LIMITS))).toMatchObject({ kind: 'malformed', message: 'a part has no field name' });
    }
  });

  it('quotes a long content type or file name short in its reason', async () => {
    expect((await failure(parseMultipart(Buffer.from('x'), `text/${'p'.repeat(10_000)}`, LIMITS))).message).toBe(`expected Content-Type multipart/form-data, got "text/${'p'.repeat(95)}…"`);
    const { body, contentType } = raw([`Content-Disposition: form-data; name="f"; filename="${'n'.repeat(5000)}"\r\n\r\n${'x'.repeat(2000)}`]);
    expect((await failure(parseMultipart(body, contentType, LIMITS))).message).toBe(`file "${'n'.repeat(100)}…" is larger than 1024 bytes`);
  });

  it('refuses field names that would reach an object prototype', async () => {
    for (const parts of [[['__proto__', 'x']], [['constructor', new Blob(['x']), 'a.txt']]] as Array<Array<[string, string | Blob, string?]>>) {
      const { body, contentType } = await encode(parts);
      expect((await failure(parseMultipart(body, contentType, LIMITS))).message).toMatch(/is not allowed/);
    }
  });
});

describe('multipart plugin steps', () => {
  const channel = channelOf('multipart', { multipart: { max_file_bytes: 10, max_files: 1, max_fields: 100, max_field_bytes: 1024 * 1024, max_total_bytes: 20 * 1024 * 1024 } });

  it('taps parse only, and only on multipart channels', async () => {
    expect(await hasStep(multipartPlugin, 'parse', channel)).toBe(true);
    expect(multipartPlugin.hooks.serialize).toBeUndefined();
    expect(await hasStep(multipartPlugin, 'parse', channelOf('form'))).toBe(false);
  });

  it('sets files and the non-file fields as payload', async () => {
    const { body, contentType } = await encode([
      ['note', 'hi'],
      ['f', new Blob([Buffer.from([0, 255, 7])], { type: 'application/x-bin' }), 'b.bin'],
    ]);
    const ex = await parseWith(multipartPlugin, channel, body, { 'content-type': contentType });
    expect(ex.payload).toEqual({ note: 'hi' });
    expect(ex.files).toEqual([{ field: 'f', filename: 'b.bin', contentType: 'application/x-bin', content: Buffer.from([0, 255, 7]) }]);
  });

  it('gives an empty file list for an empty body', async () => {
    const ex = await parseWith(multipartPlugin, channel, '', { 'content-type': 'multipart/form-data; boundary=x' });
    expect(ex.files).toEqual([]);
    expect(ex.payload).toBeUndefined();
  });

  it('applies the channel limits with defaults for the rest: 413', async () => {
    const { body, contentType } = await encode([['f', new Blob(['0123456789A']), 'big.txt']]);
    const err = await parseWith(multipartPlugin, channel, body, { 'content-type': contentType }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SvcError);
    expect((err as SvcError).status).toBe(413);
    expect((err as SvcError).details).toBe('Upload too large: file "big.txt" is larger than 10 bytes');
  });

  it('answers 400 for a malformed body and 415 for another content type', async () => {
    const cut = await parseWith(multipartPlugin, channel, '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1', { 'content-type': 'multipart/form-data; boundary=x' }).catch((e: unknown) => e);
    expect(cut).toMatchObject({ status: 400, details: 'Malformed multipart body: Unexpected end of form' });
    const json = await parseWith(multipartPlugin, channel, '{}', { 'content-type': 'application/json' }).catch((e: unknown) => e);
    expect(json).toMatchObject({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
  });
});
