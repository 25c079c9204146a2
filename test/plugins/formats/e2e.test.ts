import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { getField, parseHl7 } from '../../../sdk/hl7.ts';
import { createXmlReader } from '../../../plugins/formats/xml/codec.ts';

/**
 * Every format through a channel over real HTTP, with services in the sandbox using the SDK's
 * HL7 and download helpers.
 */

const ADT_A01 = readFileSync(new URL('../../fixtures/hl7/adt-a01.hl7', import.meta.url));
const ORU_R01 = readFileSync(new URL('../../fixtures/hl7/oru-r01-formatted.hl7', import.meta.url));

const SERVICES: Record<string, string> = {
  // XML order in, XML confirmation out; the typed model applies to XML fields.
  'order-xml.js': `import { service, t } from 'svc/sdk';
export default service({
  input: { customer: t.string(), '@id': t.string() },
  handle(ctx) {
    const lines = ctx.input.lines?.line ?? [];
    const total = lines.reduce((sum, l) => sum + Number(l['@qty']) * Number(l['@price']), 0);
    return { '#root': 'confirmation', '@order': ctx.input['@id'], customer: ctx.input.customer, line: lines.map((l) => ({ '@sku': l['@sku'] })), total: total.toFixed(2), note: 'R&D <dept>' };
  },
});`,
  'adt.js': `import { service, BadRequest, buildAck } from 'svc/sdk';
export default service({
  handle(ctx) {
    if (ctx.input['MSH.9.1'] !== 'ADT') return buildAck(ctx.payload, 'AR', { text: 'only ADT here' });
    if (!ctx.input['PID.3.1']) return buildAck(ctx.payload, 'AE', { text: 'PID-3 is required' });
    return buildAck(ctx.payload, 'AA', { text: 'admitted ' + ctx.input['PID.5.1'] });
  },
});`,
  'adt-typed.js': `import { service, t } from 'svc/sdk';
export default service({
  input: { 'PID.3.1': t.string(), 'PV1.2': t.string({ default: 'U' }) },
  handle(ctx) {
    ctx.response.contentType = 'text/plain';
    return ctx.input['PID.3.1'] + '/' + ctx.input['PV1.2'];
  },
});`,
  'hl7-echo.js': `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => ctx.payload });`,
  // Echoes the message with MSH-18 and PID-5 changed as the query asks.
  'hl7-recode.js': `import { service } from 'svc/sdk';
export default service({
  handle(ctx) {
    const msg = ctx.payload;
    if (ctx.query.charset !== undefined) msg.segments[0].fields[17] = [[[ctx.query.charset]]];
    if (ctx.query.name !== undefined) msg.segments[1].fields[4] = [[[ctx.query.name]]];
    return msg;
  },
});`,
  'form-typed.js': `import { service, t } from 'svc/sdk';
export default service({ input: { qty: t.integer(), price: t.number(), gift: t.boolean({ default: false }) }, handle: (ctx) => ctx.input });`,
  'form-echo.js': `import { service, t } from 'svc/sdk';
export default service({
  input: { name: t.string(), tags: t.array({ default: [] }) },
  handle: (ctx) => ({ input: ctx.input, payload: ctx.payload, raw: ctx.rawBody }),
});`,
  'upload.js': `import { service, BadRequest } from 'svc/sdk';
export default service({
  handle(ctx) {
    const file = ctx.files.find((f) => f.field === 'document');
    if (!file) throw new BadRequest('no file part named document');
    if (ctx.input.echo === 'bytes') {
      ctx.response.contentType = file.contentType;
      return file.content;
    }
    return { fields: ctx.payload, files: ctx.files.map((f) => ({ field: f.field, filename: f.filename, contentType: f.contentType, size: f.content.length })) };
  },
});`,
  'upload-typed.js': `import { service, t } from 'svc/sdk';
export default service({
  input: { qty: t.integer(), title: t.string(), urgent: t.boolean({ default: false }) },
  handle: (ctx) => ({ input: ctx.input, files: ctx.files.map((f) => f.filename) }),
});`,
  'download.js': `import { service, utf8Encode, toBase64, downloadHeaders } from 'svc/sdk';
export default service({
  handle(ctx) {
    const name = ctx.input.name ?? 'report.csv';
    const bytes = utf8Encode('id;name\\n1;Zoë\\n');
    if (ctx.input.as === 'base64') return { filename: name, contentBase64: toBase64(bytes) };
    Object.assign(ctx.response.headers, downloadHeaders(name, 'text/csv; charset=utf-8'));
    return bytes;
  },
});`,
};

const CONFIG = `
channel_rest:
  - { name: orders.xml, url_path: /orders.xml, service: order-xml, security: none, data_format: xml, xml: { always_array: [lines.line] } }
  - { name: adt, url_path: /hl7/adt, service: adt, security: none, data_format: hl7 }
  - { name: hl7.echo, url_path: /hl7/echo, service: hl7-echo, security: none, data_format: hl7 }
  - { name: hl7.typed, url_path: /hl7/typed, service: adt-typed, security: none, data_format: hl7 }
  - { name: hl7.recode, url_path: /hl7/recode, service: hl7-recode, security: none, data_format: hl7 }
  - { name: signup, url_path: /signup, service: form-echo, security: none, data_format: form }
  - { name: form.typed, url_path: /form/typed, service: form-typed, security: none, data_format: form }
  - { name: upload, url_path: /upload, service: upload, security: none, data_format: multipart, body_limit: 4194304, multipart: { max_file_bytes: 2097152, max_files: 2 } }
  - { name: upload.typed, url_path: /upload/typed, service: upload-typed, security: none, data_format: multipart }
  - { name: download, url_path: /download, service: download, security: none }
  - { name: download.xml, url_path: /download.xml, service: download, security: none, data_format: xml }
`;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES, listen: true });
  for (const name of Object.keys(SERVICES)) expect(k.kernel.services.errors.get(name.replace(/\.js$/, '')), name).toBeUndefined();
});
afterAll(() => k?.close());

const post = (path: string, body: BodyInit, headers: Record<string, string> = {}) => fetch(k.url + path, { method: 'POST', body, headers });

async function expectError(res: Response, status: number, details: RegExp): Promise<void> {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { result: string; cid: string; details: string };
  expect(body).toMatchObject({ result: 'Error', cid: res.headers.get('x-svc-cid') });
  expect(body.details).toMatch(details);
}

describe('xml channel', () => {
  it('takes input from the URL alone when there is no body', async () => {
    const res = await fetch(`${k.url}/orders.xml?customer=Ann&%40id=9`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<confirmation order="9"><customer>Ann</customer><total>0.00</total>');
    await expectError(await fetch(`${k.url}/orders.xml`), 400, /missing required field 'customer'/);
  });

  const order = `<?xml version="1.0" encoding="UTF-8"?>
<order id="A-17">
  <customer>Zoë &amp; Co</customer>
  <lines><line sku="X1" qty="2" price="9.50"/></lines>
</order>`;

  it('takes an XML order and answers XML', async () => {
    const res = await post('/orders.xml', order, { 'content-type': 'application/xml' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/xml; charset=utf-8');
    const text = await res.text();
    expect(text).toBe('<?xml version="1.0" encoding="UTF-8"?><confirmation order="A-17"><customer>Zoë &amp; Co</customer><line sku="X1"></line><total>19.00</total><note>R&amp;D &lt;dept&gt;</note></confirmation>');
    expect(createXmlReader()(text)).toMatchObject({ '#root': 'confirmation', '@order': 'A-17', total: '19.00', note: 'R&D <dept>' });
  });

  it('answers 400 with the CID before the service runs when the typed model is not met', async () => {
    await expectError(await post('/orders.xml', '<order id="1"><lines/></order>'), 400, /missing required field 'customer'/);
  });

  it('keeps the reason short when the parser quotes a huge name from a malformed document', async () => {
    const name = 'n'.repeat(300_000);
    for (const doc of [`<order><${name}></x${name}></order>`, `<order ${name}/>`, `<order a${name}="1" a${name}="2"/>`, `<order><${name}>`]) {
      const res = await post('/orders.xml', doc, { 'content-type': 'application/xml' });
      const text = await res.text();
      expect(res.status).toBe(400);
      expect(text.length).toBeLessThan(500);
      const body = JSON.parse(text) as { result: string; cid: string; details: string };
      expect(body).toMatchObject({ result: 'Error', cid: res.headers.get('x-svc-cid') });
      expect(body.details).toMatch(/^Malformed XML: .*nnnn…/);
      expect(body.details.length).toBeLessThanOrEqual('Malformed XML: '.length + 300);
    }
  });

  it('refuses XXE and malformed XML with 400 and the reason', async () => {
    await expectError(await post('/orders.xml', '<!DOCTYPE o [<!ENTITY x SYSTEM "file:///etc/passwd">]><order>&x;</order>'), 400, /^Malformed XML: DOCTYPE declarations are not allowed$/);
    await expectError(await post('/orders.xml', '<order><customer>a</order>'), 400, /^Malformed XML: Expected closing tag 'customer'/);
  });
});

describe('hl7 channel', () => {
  const hl7 = { 'content-type': 'x-application/hl7-v2+er7' };

  it('takes an ADT^A01 and answers with an AA ACK', async () => {
    const res = await post('/hl7/adt', ADT_A01, hl7);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('x-application/hl7-v2+er7; charset=utf-8');
    const ack = parseHl7(await res.text());
    expect(getField(ack, 'MSH.9')).toBe('ACK');
    expect(getField(ack, 'MSH.9.2')).toBe('A01');
    expect(getField(ack, 'MSH.3')).toBe('LABADT');
    expect(getField(ack, 'MSH.5')).toBe('EPICADT');
    expect(getField(ack, 'MSA.1')).toBe('AA');
    expect(getField(ack, 'MSA.2')).toBe('MSG00001');
    expect(getField(ack, 'MSA.3')).toBe("admitted O'Brien-Müller");
  });

  it('answers AR for another message type', async () => {
    const res = await post('/hl7/adt', ORU_R01, hl7);
    expect(getField(parseHl7(await res.text()), 'MSA.1')).toBe('AR');
  });

  it('round-trips a message through the sandbox byte for byte', async () => {
    for (const msg of [ADT_A01, ORU_R01]) {
      const res = await post('/hl7/echo', msg, hl7);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(msg)).toBe(true);
    }
  });

  describe('charsets', () => {
    const LATIN1 = 'x-application/hl7-v2+er7; charset=iso-8859-1';
    const message = (charset: string, name: string) => `MSH|^~\\&|LAB|CITY|EHR|CITY|20240101||ADT^A01|MSG7|P|2.5||||||${charset}\rPID|1||42||${name}\r`;
    const latin1 = (text: string) => Buffer.from(text, 'latin1');
    const bytesOf = async (res: Response) => Buffer.from(await res.arrayBuffer());

    it('echoes an 8859/1 message byte for byte, bytes >= 0x80 included', async () => {
      for (const charset of ['8859/1', 'ASCII']) {
        const sent = latin1(message(charset, 'Ren\xe9e^Zo\xeb \xff'));
        expect(sent.includes(0xe9)).toBe(true);
        const res = await post('/hl7/echo', sent, hl7);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe(LATIN1);
        expect((await bytesOf(res)).equals(sent)).toBe(true);
      }
    });

    it("answers an 8859/1 message with an ACK in 8859/1: the ACK names no charset, the request's applies", async () => {
      const res = await post('/hl7/adt', latin1(message('8859/1', 'M\xfcller^Zo\xeb')), hl7);
      expect(res.headers.get('content-type')).toBe(LATIN1);
      const bytes = await bytesOf(res);
      expect(bytes.includes(latin1('admitted M\xfcller'))).toBe(true);
      expect(bytes.includes(Buffer.from('Müller', 'utf8'))).toBe(false);
    });

    it("writes in the charset the reply's own MSH-18 names", async () => {
      const toLatin1 = await post('/hl7/recode?charset=8859%2F1', Buffer.from(message('', 'Zoë'), 'utf8'), hl7);
      expect(toLatin1.headers.get('content-type')).toBe(LATIN1);
      expect((await bytesOf(toLatin1)).equals(latin1(message('8859/1', 'Zo\xeb')))).toBe(true);
      const toUtf8 = await post('/hl7/recode?charset=UNICODE%20UTF-8', latin1(message('8859/1', 'Zo\xeb')), hl7);
      expect(toUtf8.headers.get('content-type')).toBe('x-application/hl7-v2+er7; charset=utf-8');
      expect((await bytesOf(toUtf8)).equals(Buffer.from(message('UNICODE UTF-8', 'Zoë'), 'utf8'))).toBe(true);
    });

    it('answers 500 with the reason when the reply holds a character its charset cannot', async () => {
      const res = await post(`/hl7/recode?name=${encodeURIComponent('Price 5€')}`, latin1(message('8859/1', 'x')), hl7);
      await expectError(res, 500, /^Service output cannot be written as HL7: "€" \(U\+20AC\) at character \d+ cannot be written in ISO-8859-1, the charset the reply's MSH-18 names \("8859\/1"\)/);
    });
  });

  it('applies a typed model declared with HL7 paths', async () => {
    const res = await post('/hl7/typed', ADT_A01, hl7);
    expect(await res.text()).toBe('123456/I');
    const noPid3 = 'MSH|^~\\&|A|B|C|D|20240101||ADT^A01|9|P|2.5\rPID|1||^^^X\r';
    await expectError(await post('/hl7/typed', noPid3, hl7), 400, /missing required field 'PID.3.1'/);
  });

  it('answers a malformed message with 400 and the reason', async () => {
    await expectError(await post('/hl7/adt', 'PID|1||123\r', hl7), 400, /^Malformed HL7 message: message does not start with an MSH segment/);
    await expectError(await post('/hl7/adt', 'MSH|^~\\|X\r', hl7), 400, /MSH-2 must hold 4 encoding characters/);
  });
});

describe('form channel', () => {
  it('gives form fields to the service, repeated keys as lists', async () => {
    const res = await post('/signup', 'name=Zo%C3%AB+Li&tags=a&tags=b', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ input: { name: 'Zoë Li', tags: ['a', 'b'] }, payload: { name: 'Zoë Li', tags: ['a', 'b'] }, raw: 'name=Zo%C3%AB+Li&tags=a&tags=b' });
  });

  it('converts text fields to the typed model like URL parameters', async () => {
    const res = await post('/form/typed', 'qty=3&price=2.5&gift=true');
    expect(await res.json()).toEqual({ qty: 3, price: 2.5, gift: true });
    await expectError(await post('/form/typed', 'qty=three&price=1'), 400, /field 'qty' must be an integer/);
  });

  it('applies the typed model and refuses broken encoding', async () => {
    await expectError(await post('/signup', 'tags=a'), 400, /missing required field 'name'/);
    await expectError(await post('/signup', 'name=%E0%A4%A'), 400, /^Malformed form body: /);
  });
});

describe('multipart channel', () => {
  const upload = (parts: Array<[string, string | Blob, string?]>, query = '', path = '/upload') => {
    const form = new FormData();
    for (const [name, value, filename] of parts) {
      if (typeof value === 'string') form.append(name, value);
      else form.append(name, value, filename);
    }
    return fetch(`${k.url}${path}${query}`, { method: 'POST', body: form });
  };

  it('reads an uploaded binary file back byte-exact', async () => {
    const bytes = randomBytes(300_000);
    const res = await upload([['document', new Blob([bytes], { type: 'image/png' }), 'scan.png'], ['echo', 'bytes']]);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('describes files and fields to the service', async () => {
    const res = await upload([
      ['title', 'Q1'],
      ['document', new Blob(['a,b\n'], { type: 'text/csv' }), 'résumé.csv'],
    ]);
    expect(await res.json()).toEqual({ fields: { title: 'Q1' }, files: [{ field: 'document', filename: 'résumé.csv', contentType: 'text/csv', size: 4 }] });
  });

  it('lets the service answer 400 when no file part is present', async () => {
    await expectError(await upload([['title', 'no file']]), 400, /no file part named document/);
  });

  it('answers 413 over a limit, never a truncated file', async () => {
    await expectError(await upload([['document', new Blob([Buffer.alloc(2_097_153)]), 'big.bin']]), 413, /^Upload too large: file "big.bin" is larger than 2097152 bytes$/);
    const three = [1, 2, 3].map((i) => ['document', new Blob(['x']), `${i}.txt`] as [string, Blob, string]);
    await expectError(await upload(three), 413, /more than 2 files/);
  });

  it('converts text fields to the typed model like URL parameters', async () => {
    const res = await upload([['qty', '3'], ['title', 'Q1'], ['urgent', 'true'], ['scan', new Blob(['x']), 'a.txt']], '', '/upload/typed');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ input: { qty: 3, title: 'Q1', urgent: true }, files: ['a.txt'] });
  });

  it('answers 400 naming the field when a multipart field does not fit the typed model', async () => {
    await expectError(await upload([['qty', 'three'], ['title', 'Q1']], '', '/upload/typed'), 400, /field 'qty' must be an integer/);
    await expectError(await upload([['qty', '2.5'], ['title', 'Q1']], '', '/upload/typed'), 400, /field 'qty' must be an integer/);
    await expectError(await upload([['qty', '1']], '', '/upload/typed'), 400, /missing required field 'title'/);
  });

  it('answers 415 for a body that is not multipart', async () => {
    await expectError(await post('/upload', '{}', { 'content-type': 'application/json' }), 415, /expected Content-Type multipart\/form-data/);
  });
});

describe('downloads', () => {
  it('sends bytes with the content type and Content-Disposition the service set', async () => {
    const res = await fetch(`${k.url}/download?name=report.csv`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename=report.csv');
    expect(Buffer.from(await res.arrayBuffer()).toString('utf8')).toBe('id;name\n1;Zoë\n');
  });

  it('encodes a non-ASCII file name per RFC 6266', async () => {
    const res = await fetch(`${k.url}/download?name=${encodeURIComponent('Bericht März.csv')}`);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="Bericht Marz.csv"; filename*=UTF-8''Bericht%20M%C3%A4rz.csv`);
  });

  it('leaves a download on an XML channel as bytes', async () => {
    const res = await fetch(`${k.url}/download.xml?name=a.csv`);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(await res.text()).toBe('id;name\n1;Zoë\n');
  });

  it('can return the file base64-encoded inside JSON instead', async () => {
    const res = await fetch(`${k.url}/download?as=base64`);
    const body = (await res.json()) as { filename: string; contentBase64: string };
    expect(Buffer.from(body.contentBase64, 'base64').toString('utf8')).toBe('id;name\n1;Zoë\n');
  });
});
