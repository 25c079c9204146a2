import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseHl7, serializeHl7, stripFraming } from '../../../../sdk/hl7/codec.ts';
import { decodeLeaf, encodeLeaf, bytesToText } from '../../../../sdk/hl7/escape.ts';
import { getAllFields, getField } from '../../../../sdk/hl7/fields.ts';
import { buildAck, hl7Timestamp } from '../../../../sdk/hl7/ack.ts';
import { Hl7Error, STANDARD_DELIMITERS, type Hl7Message } from '../../../../sdk/hl7/types.ts';
import { decodeHl7Bytes, encodeHl7Text } from '../../../../plugins/formats/hl7/bytes.ts';
import { flattenFields } from '../../../../plugins/formats/hl7/flatten.ts';
import hl7Plugin, { HL7_CONTENT_TYPE, hl7Payload } from '../../../../plugins/formats/hl7/plugin.ts';
import { SvcError } from '../../../../kernel/errors.ts';
import { channelOf, hasStep, parseWith, serializeWith } from '../support.ts';

const CORPUS_DIR = join(import.meta.dirname, '../../../fixtures/hl7');
const corpus = readdirSync(CORPUS_DIR)
  .filter((f) => f.endsWith('.hl7'))
  .sort()
  .map((name) => ({ name, bytes: readFileSync(join(CORPUS_DIR, name)) }));

const D = STANDARD_DELIMITERS;
const seg = (...lines: string[]) => lines.join('\r') + '\r';
const MSH = 'MSH|^~\\&|SEND|SFAC|RECV|RFAC|20240101120000||ADT^A01^ADT_A01|CTRL1|P|2.5';

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(Hl7Error);
    return (err as Error).message;
  }
  throw new Error('expected an Hl7Error');
}

describe('hl7 corpus', () => {
  it('holds the message types the issue asks for', () => {
    const types = corpus.map(({ bytes }) => getField(parseHl7(bytes.toString('utf8')), 'MSH.9.1') + '^' + getField(parseHl7(bytes.toString('utf8')), 'MSH.9.2'));
    expect(types).toEqual(expect.arrayContaining(['ADT^A01', 'ADT^A08', 'ORU^R01', 'ORM^O01']));
  });

  it('uses every escape, repetitions, components and subcomponents somewhere', () => {
    const all = corpus.map((c) => c.bytes.toString('utf8')).join('\n');
    for (const esc of ['\\F\\', '\\S\\', '\\T\\', '\\R\\', '\\E\\', '\\X0D\\']) expect(all).toContain(esc);
    expect(all).toMatch(/[^\r|]~[^\r|]/);
    expect(all).toMatch(/[^\r|]&[^\r|]/);
  });

  for (const { name, bytes } of corpus) {
    it(`${name}: parse → serialize is byte-identical`, () => {
      const text = bytes.toString('utf8');
      expect(Buffer.from(serializeHl7(parseHl7(text)), 'utf8').equals(bytes)).toBe(true);
    });

    it(`${name}: the round trip survives JSON (the sandbox boundary)`, () => {
      const payload = JSON.parse(JSON.stringify(hl7Payload(decodeHl7Bytes(bytes))));
      expect(Buffer.from(serializeHl7(payload), 'utf8').equals(bytes)).toBe(true);
    });

    it(`${name}: serialize → parse gives the same structure`, () => {
      const msg = parseHl7(bytes.toString('utf8'));
      expect(parseHl7(serializeHl7(msg))).toEqual(msg);
    });
  }

  it('decodes the escapes of the ORU report', () => {
    const msg = parseHl7(corpus.find((c) => c.name === 'oru-r01.hl7')!.bytes.toString('utf8'));
    expect(getField(msg, 'OBX[4].5')).toBe('Specimen: venous blood\r\nComment: sample slightly hemolysed | repeat advised\r\nRatio A^B & C');
    expect(getField(msg, 'OBX[4].5[2]')).toBe('D~E');
    expect(getField(msg, 'NTE.3')).toBe('Reviewed by Dr. Kildare \\ Welby');
    expect(getAllFields(msg, 'OBX.5')).toEqual(['182', '0.9', '<135', expect.any(String)]);
    expect(msg.verbatim).toBeUndefined();
  });

  it('keeps non-canonical escapes of the formatted report verbatim', () => {
    const text = corpus.find((c) => c.name === 'oru-r01-formatted.hl7')!.bytes.toString('utf8');
    const msg = parseHl7(text);
    expect(msg.delimiters.truncation).toBe('#');
    expect(getField(msg, 'OBX.5')).toBe('\\H\\FINAL DIAGNOSIS:\\N\\\\.br\\Benign tissue\\.br\\\\.sp2\\No malignancy seen.\\.br\\Hex-escaped: A \\xc3a9\\ Lone \\ backslash');
    expect(getField(msg, 'OBX[2].5')).toBe('Size #3 # 2cm');
    expect(Object.keys(msg.verbatim ?? {})).toHaveLength(2);
    expect(serializeHl7(msg)).toBe(text);
  });
});

describe('hl7 structure', () => {
  const text = seg(MSH, 'PID|1||123^^^HOSP&1.2.3&ISO^MR~456^^^SSA||Doe^John^Q||19700101|M', 'NTE', 'NTE|', 'OBX|1|ST|A||x', 'OBX|2|ST|B||y');
  const msg = parseHl7(text);

  it('numbers fields from 1 at fields[0], MSH-1 and MSH-2 being the delimiters', () => {
    const [msh, pid] = msg.segments;
    expect(msh!.fields[0]).toEqual([[['|']]]);
    expect(msh!.fields[1]).toEqual([[['^~\\&']]]);
    expect(msh!.fields[8]).toEqual([[['ADT'], ['A01'], ['ADT_A01']]]);
    expect(pid!.name).toBe('PID');
    expect(pid!.fields[0]).toEqual([[['1']]]);
    expect(pid!.fields[1]).toEqual([[['']]]);
  });

  it('splits repetitions, components and subcomponents', () => {
    expect(msg.segments[1]!.fields[2]).toEqual([
      [['123'], [''], [''], ['HOSP', '1.2.3', 'ISO'], ['MR']],
      [['456'], [''], [''], ['SSA']],
    ]);
  });

  it('tells a segment without fields from one with an empty field', () => {
    expect(msg.segments[2]).toEqual({ name: 'NTE', fields: [] });
    expect(msg.segments[3]).toEqual({ name: 'NTE', fields: [[[['']]]] });
    expect(serializeHl7(msg)).toBe(text);
  });

  it('keeps trailing empty fields and components', () => {
    const t = seg(MSH, 'PV1|1|I|W^1^^|||');
    expect(serializeHl7(parseHl7(t))).toBe(t);
    expect(parseHl7(t).segments[1]!.fields).toHaveLength(6);
  });

  for (const [label, sep] of [['LF', '\n'], ['CRLF', '\r\n'], ['CR', '\r']] as const) {
    it(`accepts ${label} between segments and writes it back`, () => {
      const t = [MSH, 'PID|1', 'PV1|1'].join(sep) + sep;
      const m = parseHl7(t);
      expect(m.separator).toBe(sep);
      expect(m.segments.map((s) => s.name)).toEqual(['MSH', 'PID', 'PV1']);
      expect(serializeHl7(m)).toBe(t);
    });
  }

  it('remembers a missing final separator', () => {
    const t = `${MSH}\rPID|1`;
    const m = parseHl7(t);
    expect(m.trailingSeparator).toBe(false);
    expect(serializeHl7(m)).toBe(t);
  });

  it('skips blank lines between segments', () => {
    expect(parseHl7(`${MSH}\r\rPID|1\r\r`).segments.map((s) => s.name)).toEqual(['MSH', 'PID']);
  });

  it('drops a byte-order mark and MLLP framing', () => {
    const t = seg(MSH, 'PID|1');
    expect(stripFraming(`\uFEFF\x0b${t}\x1c\r`)).toBe(t);
    expect(serializeHl7(parseHl7(`\x0b${t}\x1c\r`))).toBe(t);
  });

  it('reads custom delimiters from MSH-1 and MSH-2', () => {
    const t = seg('MSH*!@$%*A*B', 'PID*1**X!Y@Z%W*A$F$B$E$C');
    const m = parseHl7(t);
    expect(m.delimiters).toEqual({ field: '*', component: '!', repetition: '@', escape: '$', subcomponent: '%' });
    expect(m.segments[1]!.fields[2]).toEqual([[['X'], ['Y']], [['Z', 'W']]]);
    expect(getField(m, 'PID.4')).toBe('A*B$C');
    expect(serializeHl7(m)).toBe(t);
  });
});

describe('hl7 escapes', () => {
  it('decodes the delimiter escapes', () => {
    expect(decodeLeaf('a\\F\\b\\S\\c\\T\\d\\R\\e\\E\\f', D)).toBe('a|b^c&d~e\\f');
  });

  it('decodes hex data as UTF-8, else as ISO-8859-1', () => {
    expect(decodeLeaf('\\X0D0A\\', D)).toBe('\r\n');
    expect(decodeLeaf('caf\\XC3A9\\', D)).toBe('café');
    expect(decodeLeaf('caf\\XE9\\', D)).toBe('café');
    expect(bytesToText([0xf0, 0x9f, 0x98, 0x80])).toBe('😀');
    expect(bytesToText([0xc3])).toBe('Ã');
    expect(bytesToText([0xed, 0xa0, 0x80])).toBe('í\u00a0\u0080'); // a UTF-8 surrogate is not UTF-8
  });

  it('keeps formatting escapes, unknown sequences and a lone escape character as written', () => {
    expect(decodeLeaf('\\H\\bold\\N\\ \\.br\\ \\Zfoo\\ \\X4\\ a\\b', D)).toBe('\\H\\bold\\N\\ \\.br\\ \\Zfoo\\ \\X4\\ a\\b');
  });

  it('decodes \\P\\ only when MSH-2 declares a truncation character', () => {
    expect(decodeLeaf('x\\P\\', { ...D, truncation: '#' })).toBe('x#');
    expect(decodeLeaf('x\\P\\', D)).toBe('x\\P\\');
  });

  it('encodes delimiters, the escape character and line breaks', () => {
    expect(encodeLeaf('a|b^c&d~e\\f', D)).toBe('a\\F\\b\\S\\c\\T\\d\\R\\e\\E\\f');
    expect(encodeLeaf('line1\r\nline2\n', D)).toBe('line1\\X0D\\\\X0A\\line2\\X0A\\');
    expect(encodeLeaf('tab\there', D)).toBe('tab\there');
  });

  it('passes formatting commands through when encoding', () => {
    expect(encodeLeaf('a\\.br\\b\\H\\c\\N\\\\.sp2\\\\C2842\\', D)).toBe('a\\.br\\b\\H\\c\\N\\\\.sp2\\\\C2842\\');
    expect(encodeLeaf('C:\\Zip\\x', D)).toBe('C:\\E\\Zip\\E\\x');
  });

  it('reuses a non-canonical spelling only while the value is unchanged', () => {
    const t = seg(MSH, 'NTE|1||\\X41\\BC');
    const m = parseHl7(t);
    expect(getField(m, 'NTE.3')).toBe('ABC');
    expect(serializeHl7(m)).toBe(t);
    m.segments[1]!.fields[2] = [[['ABD']]];
    expect(serializeHl7(m)).toBe(seg(MSH, 'NTE|1||ABD'));
  });

  it('writes the right values when segments move under remembered spellings', () => {
    const t = seg(MSH, 'NTE|1||\\X41\\');
    const m = parseHl7(t);
    m.segments.splice(1, 0, { name: 'NTE', fields: [[[['0']]], [[['']]], [[['B|']]]] });
    const again = parseHl7(serializeHl7(m));
    expect(getAllFields(again, 'NTE.3')).toEqual(['B|', 'A']);
  });
});

describe('hl7 fields by position', () => {
  const msg = parseHl7(seg(MSH, 'PID|1||123^^^HOSP&1.2.3&ISO^MR~456||Doe^John||19700101|M', 'OBX|1|NM|GLU||5.5', 'OBX|2|NM|K||4.1'));

  it('flattens the first occurrence: field, components, and subcomponents where there are several', () => {
    const flat = flattenFields(msg);
    expect(flat['PID.5']).toBe('Doe');
    expect(flat['PID.5.1']).toBe('Doe');
    expect(flat['PID.5.2']).toBe('John');
    expect(flat['PID.3']).toBe('123');
    expect(flat['PID.3.4']).toBe('HOSP');
    expect(flat['PID.3.4.1']).toBe('HOSP');
    expect(flat['PID.3.4.2']).toBe('1.2.3');
    expect(flat['PID.3.4.3']).toBe('ISO');
    expect(flat['PID.8']).toBe('M');
    expect(flat['PID.8.1']).toBe('M');
    expect(flat['MSH.9.2']).toBe('A01');
    expect(flat['MSH.10']).toBe('CTRL1');
    expect(flat['OBX.5']).toBe('5.5');
    expect(flat).not.toHaveProperty('PID.2');
    expect(flat).not.toHaveProperty('PID.5.1.1'); // a component without subcomponents: getField reads it
    expect(Object.values(flat)).not.toContain('456'); // second repetition: use segments or getField
    expect(Object.values(flat)).not.toContain('4.1'); // second OBX: likewise
    expect(Object.keys(flat).filter((k) => k.startsWith('PID.'))).toEqual([
      'PID.1', 'PID.1.1', 'PID.3', 'PID.3.1', 'PID.3.4', 'PID.3.4.1', 'PID.3.4.2', 'PID.3.4.3', 'PID.3.5', 'PID.5', 'PID.5.1', 'PID.5.2', 'PID.7', 'PID.7.1', 'PID.8', 'PID.8.1',
    ]);
  });

  it('reads every spelling of a value by path', () => {
    expect(getField(msg, 'PID.5.1.1')).toBe('Doe');
    expect(getField(msg, 'PID.8.1.1')).toBe('M');
  });

  it('reads any occurrence and repetition by path', () => {
    expect(getField(msg, 'OBX[2].5')).toBe('4.1');
    expect(getField(msg, 'OBX[3].5')).toBeUndefined();
    expect(getField(msg, 'PID.3[2]')).toBe('456');
    expect(getField(msg, 'PID-3.4.3')).toBe('ISO');
    expect(getField(msg, 'PID.2')).toBeUndefined();
    expect(getAllFields(msg, 'OBX.3')).toEqual(['GLU', 'K']);
  });

  it('refuses malformed paths', () => {
    expect(reason(() => getField(msg, 'PID'))).toMatch(/not an HL7 field path/);
    expect(reason(() => getField(msg, 'pid.5'))).toMatch(/not an HL7 field path/);
    expect(reason(() => getField(msg, 'PID.0'))).toMatch(/count from 1/);
    expect(reason(() => getAllFields(msg, 'OBX[1].5'))).toMatch(/leave out/);
  });
});

describe('hl7 malformed messages', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['empty', '', /empty message/],
    ['whitespace only', ' \r\n', /empty message/],
    ['no MSH', seg('PID|1'), /does not start with an MSH segment/],
    ['a batch', seg('FHS|^~\\&', MSH), /batch files/],
    ['MSH alone', 'MSH', /MSH-1 \(field separator\) is missing/],
    ['a letter as field separator', 'MSHA^~\\&A', /not a usable delimiter/],
    ['a space as field separator', 'MSH ^~\\& ', /not a usable delimiter/],
    ['three encoding characters', seg('MSH|^~\\|A'), /MSH-2 must hold 4 encoding characters/],
    ['six encoding characters', seg('MSH|^~\\&#!|A'), /MSH-2 must hold 4 encoding characters/],
    ['a repeated encoding character', seg('MSH|^^\\&|A'), /repeats the delimiter/],
    ['a digit among encoding characters', seg('MSH|^~1&|A'), /not a usable delimiter/],
    ['a lower-case segment name', seg(MSH, 'pid|1'), /segment 2 has an invalid name "pid"/],
    ['a short segment name', seg(MSH, 'P1'), /segment 2 has an invalid name "P1"/],
    ['a name not followed by the separator', seg(MSH, 'PIDX|1'), /must be followed by the field separator/],
    ['a second MSH', seg(MSH, 'PID|1', MSH), /second MSH/],
  ];

  for (const [label, text, why] of cases) {
    it(`refuses ${label}`, () => {
      expect(reason(() => parseHl7(text))).toMatch(why);
    });
  }

  it('refuses bytes that are not UTF-8 unless MSH-18 declares ISO-8859-1', () => {
    const latin = Buffer.from(seg(MSH, 'PID|1||||M\xfcller'), 'latin1');
    expect(reason(() => decodeHl7Bytes(latin))).toMatch(/not valid UTF-8/);
    const declared = Buffer.from(seg('MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5||||||8859/1', 'PID|1||||M\xfcller'), 'latin1');
    expect(getField(parseHl7(decodeHl7Bytes(declared)), 'PID.5')).toBe('Müller');
  });
});

describe('hl7 output charset', () => {
  const LATIN_MSH = `${MSH}||||||8859/1`;
  const latinRequest = Buffer.from(seg(LATIN_MSH, 'PID|1||||M\xfcller'), 'latin1');
  const utf8Request = Buffer.from(seg(MSH, 'PID|1||||Müller'), 'utf8');

  it("writes ISO-8859-1 bytes when the reply's MSH-18 names it, whatever the request was", () => {
    const text = seg(LATIN_MSH, 'PID|1||||Zoë');
    for (const request of [utf8Request, latinRequest, undefined]) {
      expect(encodeHl7Text(text, request)).toEqual({ body: Buffer.from(text, 'latin1'), charset: 'iso-8859-1' });
    }
    const lf = `${LATIN_MSH}\nPID|1||||Zoë\n`;
    expect(encodeHl7Text(lf, undefined)).toEqual({ body: Buffer.from(lf, 'latin1'), charset: 'iso-8859-1' });
  });

  it("falls back to the request's MSH-18 when the reply names none", () => {
    const ack = seg('MSH|^~\\&|RECV|RFAC|SEND|SFAC|20240101||ACK^A01^ACK|9|P|2.5', 'MSA|AA|CTRL1|Müller');
    expect(encodeHl7Text(ack, latinRequest)).toEqual({ body: Buffer.from(ack, 'latin1'), charset: 'iso-8859-1' });
    expect(encodeHl7Text(ack, utf8Request)).toEqual({ body: ack, charset: 'utf-8' });
    expect(encodeHl7Text('not HL7 at all: é', latinRequest)).toEqual({ body: Buffer.from('not HL7 at all: é', 'latin1'), charset: 'iso-8859-1' });
  });

  it('writes UTF-8 when the reply names UNICODE UTF-8, even for an 8859/1 request', () => {
    const text = seg(`${MSH}||||||UNICODE UTF-8`, 'PID|1||||Zoë €');
    expect(encodeHl7Text(text, latinRequest)).toEqual({ body: text, charset: 'utf-8' });
  });

  it('refuses characters ISO-8859-1 cannot hold, naming the character and where the charset came from', () => {
    expect(reason(() => encodeHl7Text(seg(MSH, 'MSA|AA|1|5 €'), latinRequest))).toMatch(/^"€" \(U\+20AC\) at character \d+ cannot be written in ISO-8859-1, the charset the request's MSH-18 names \("8859\/1"\)/);
    expect(reason(() => encodeHl7Text(seg(LATIN_MSH, 'NTE|1||😀'), undefined))).toMatch(/^"😀" \(U\+1F600\) .* the reply's MSH-18 names/);
  });
});

describe('hl7 writing', () => {
  it('writes a hand-built message with the standard delimiters and CR', () => {
    const text = serializeHl7({
      segments: [
        { name: 'MSH', fields: ['|', '^~\\&', 'APP', 'FAC', '', '', '20240101', '', [['ORU', 'R01']], 'ID1', 'P', '2.5'] },
        { name: 'OBX', fields: [1, 'NM', [['GLU', 'Glucose | fasting']], null, 5.5, [[['mmol/L', 'ucum']]], undefined, true, ['a', 'b']] },
      ],
    });
    expect(text).toBe(seg('MSH|^~\\&|APP|FAC|||20240101||ORU^R01|ID1|P|2.5', 'OBX|1|NM|GLU^Glucose \\F\\ fasting||5.5|mmol/L&ucum||true|a~b'));
  });

  it('writes with the given delimiters, separator and no final separator', () => {
    const text = serializeHl7({
      delimiters: { field: '*', component: '!' },
      separator: '\n',
      trailingSeparator: false,
      segments: [{ name: 'MSH', fields: [] }, { name: 'PID', fields: [['a*b', 'c!d']] }],
    });
    expect(text).toBe('MSH*!~\\&\nPID*a\\F\\b~c\\S\\d');
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['no segments array', {}, /segments array/],
    ['no segments', { segments: [] }, /at least the MSH/],
    ['a first segment other than MSH', { segments: [{ name: 'PID', fields: [] }] }, /first segment must be MSH/],
    ['a second MSH', { segments: [{ name: 'MSH' }, { name: 'MSH' }] }, /second MSH/],
    ['an invalid segment name', { segments: [{ name: 'MSH' }, { name: 'pid' }] }, /invalid name/],
    ['fields that are not an array', { segments: [{ name: 'MSH' }, { name: 'PID', fields: 'x' }] }, /fields must be an array/],
    ['arrays nested too deep', { segments: [{ name: 'MSH' }, { name: 'PID', fields: [[[['x', ['y']]]]] }] }, /PID-1: .*nested too deep/],
    ['an object as value', { segments: [{ name: 'MSH' }, { name: 'PID', fields: [{ a: 1 }] }] }, /PID-1: a value must be text/],
    ['clashing delimiters', { delimiters: { component: '|' }, segments: [{ name: 'MSH' }] }, /delimiters repeat/],
    ['a letter as delimiter', { delimiters: { escape: 'E' }, segments: [{ name: 'MSH' }] }, /not a usable delimiter/],
    ['a long delimiter', { delimiters: { component: '^^' }, segments: [{ name: 'MSH' }] }, /single characters/],
    ['a bad separator', { separator: ';', segments: [{ name: 'MSH' }] }, /separator must be/],
  ];
  for (const [label, value, why] of bad) {
    it(`refuses ${label}`, () => {
      expect(reason(() => serializeHl7(value as never))).toMatch(why);
    });
  }
});

describe('hl7 ACK', () => {
  const received = seg('MSH|^~\\&|SEND^1.2^ISO|SFAC|RECV|RFAC|20240101120000||ADT^A01^ADT_A01|CTRL1|P|2.5.1', 'PID|1');
  const now = new Date(Date.UTC(2024, 2, 12, 8, 30, 15));

  it('acknowledges with AA, swapping sender and receiver', () => {
    expect(buildAck(received, 'AA', { now, controlId: 'ACK1' })).toBe(
      seg('MSH|^~\\&|RECV|RFAC|SEND^1.2^ISO|SFAC|20240312083015+0000||ACK^A01^ACK|ACK1|P|2.5.1', 'MSA|AA|CTRL1'),
    );
  });

  it('reports AE and AR with an escaped text and an ERR segment', () => {
    const ae = parseHl7(buildAck(received, 'AE', { now, controlId: 'A2', text: 'PID-3 missing | bad' }));
    expect(getField(ae, 'MSA.1')).toBe('AE');
    expect(getField(ae, 'MSA.3')).toBe('PID-3 missing | bad');
    expect(getField(ae, 'ERR.3.1')).toBe('207');
    expect(getField(ae, 'ERR.3.2')).toBe('PID-3 missing | bad');
    expect(getField(ae, 'ERR.4')).toBe('E');
    const ar = parseHl7(buildAck(parseHl7(received), 'AR', { now, controlId: 'A3', errorCode: '200' }));
    expect(getField(ar, 'MSA.1')).toBe('AR');
    expect(getField(ar, 'ERR.3.1')).toBe('200');
  });

  it("answers in the received message's delimiters", () => {
    const ack = buildAck(seg('MSH*!@$%*A*B*C*D*1**ADT!A08*X9*T*2.3'), 'AA', { now, controlId: 'Z' });
    expect(ack).toBe(seg('MSH*!@$%*C*D*A*B*20240312083015+0000**ACK!A08!ACK*Z*T*2.3', 'MSA*AA*X9'));
  });

  it('writes plain ACK when the message has no trigger event', () => {
    expect(buildAck(seg('MSH|^~\\&|A||||1||ACK|9|P|2.5'), 'AA', { now, controlId: 'Z' })).toContain('||ACK|Z|');
  });

  it('invents a time-based control id and stamps the current time by default', () => {
    const ack = parseHl7(buildAck(received));
    expect(getField(ack, 'MSH.10')).toMatch(/^\d{17}$/);
    expect(getField(ack, 'MSH.7')).toMatch(/^\d{14}\+0000$/);
    expect(hl7Timestamp(new Date(0))).toBe('19700101000000+0000');
  });

  it('refuses unknown codes and unreadable messages', () => {
    expect(reason(() => buildAck(received, 'CA' as never))).toMatch(/AA, AE or AR/);
    expect(reason(() => buildAck('PID|1', 'AA'))).toMatch(/MSH/);
    expect(reason(() => buildAck({ segments: [] } as unknown as Hl7Message, 'AA'))).toMatch(/no MSH/);
  });
});

describe('hl7 plugin steps', () => {
  const channel = channelOf('hl7');

  it('taps parse and serialize only on hl7 channels', async () => {
    expect(await hasStep(hl7Plugin, 'parse', channel)).toBe(true);
    expect(await hasStep(hl7Plugin, 'serialize', channel)).toBe(true);
    expect(await hasStep(hl7Plugin, 'parse', channelOf('json'))).toBe(false);
    expect(await hasStep(hl7Plugin, 'serialize', channelOf('xml'))).toBe(false);
  });

  it('gives the service flat fields and the structure, the raw message staying the raw body', async () => {
    const text = corpus.find((c) => c.name === 'adt-a01.hl7')!.bytes.toString('utf8');
    const ex = await parseWith(hl7Plugin, channel, text);
    const payload = ex.payload as Record<string, unknown>;
    expect(ex.rawBody?.toString('utf8')).toBe(text);
    expect(payload).not.toHaveProperty('raw');
    expect(payload['PID.5.1']).toBe("O'Brien-Müller");
    expect(payload['PID.11.1']).toBe('12 Main St|Apt 4');
    expect(payload['MSH.9.2']).toBe('A01');
    expect((payload.segments as unknown[]).length).toBe(7);
    expect(payload.delimiters).toEqual(D);
  });

  it('leaves an empty body alone', async () => {
    const ex = await parseWith(hl7Plugin, channel, '');
    expect(ex.payload).toBeUndefined();
  });

  it('answers a malformed message with 400 and the reason', async () => {
    const err = await parseWith(hl7Plugin, channel, 'PID|1\r').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SvcError);
    expect((err as SvcError).status).toBe(400);
    expect((err as SvcError).details).toMatch(/^Malformed HL7 message: message does not start with an MSH segment/);
  });

  it('writes a message object as ER7 with the HL7 content type', async () => {
    const r = await serializeWith(hl7Plugin, channel, { body: parseHl7(seg(MSH, 'PID|1')) });
    expect(r.body).toBe(seg(MSH, 'PID|1'));
    expect(r.contentType).toBe(HL7_CONTENT_TYPE);
  });

  it('sends text and bytes as they are, keeping a content type the service chose', async () => {
    expect(await serializeWith(hl7Plugin, channel, { body: 'MSH|x' })).toMatchObject({ body: 'MSH|x', contentType: HL7_CONTENT_TYPE });
    const bytes = Buffer.from([1, 2, 3]);
    const r = await serializeWith(hl7Plugin, channel, { body: bytes, headers: { 'Content-Type': 'application/octet-stream' } });
    expect(r.body).toBe(bytes);
    expect(r.contentType).toBeUndefined();
    expect((await serializeWith(hl7Plugin, channel, { body: 'x', contentType: 'text/plain' })).contentType).toBe('text/plain');
    expect((await serializeWith(hl7Plugin, channel, { body: undefined })).contentType).toBeUndefined();
  });

  it('answers 500 when the service output is not a message', async () => {
    for (const body of [{ ok: true }, [1, 2], { segments: [{ name: 'PID' }] }]) {
      const err = await serializeWith(hl7Plugin, channel, { body }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SvcError);
      expect((err as SvcError).status).toBe(500);
      expect((err as SvcError).details).toMatch(/^Service output cannot be written as HL7/);
    }
  });
});
