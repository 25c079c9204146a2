/**
 * Parse + serialize throughput of each format codec, against a trivial baseline measured in
 * the same run: JSON.parse/JSON.stringify of an equivalent document, and for XML also raw
 * fast-xml-parser (parse + build with default options, no safety checks).
 * Run: node --import tsx bench/formats-micro.ts   (prints a markdown table)
 */
import { readFileSync } from 'node:fs';
import { XMLBuilder, XMLParser } from 'fast-xml-parser';
import { buildXml, createXmlReader, decodeXmlBytes } from '../plugins/formats/xml/codec.ts';
import { parseHl7, serializeHl7 } from '../sdk/hl7/codec.ts';
import { decodeHl7Bytes } from '../plugins/formats/hl7/bytes.ts';
import { hl7Payload } from '../plugins/formats/hl7/plugin.ts';
import { buildAck } from '../sdk/hl7/ack.ts';
import { parseForm } from '../plugins/formats/form/codec.ts';
import { parseMultipart } from '../plugins/formats/multipart/codec.ts';
import { parse as rawCsvParse } from 'csv-parse/sync';
import { createCsvReader } from '../plugins/formats/csv/read.ts';
import { csvChannelSchema } from '../plugins/formats/csv/schema.ts';
import { createCsvWriter } from '../plugins/formats/csv/write.ts';

const MS = Number(process.env.BENCH_MICRO_MS ?? 600);

/** Operations per second of fn, best of three timed runs after a warm-up; awaits only promises. */
async function opsPerSecond(fn: () => unknown): Promise<number> {
  const isAsync = fn() instanceof Promise;
  const batch = async () => {
    if (isAsync) for (let i = 0; i < 16; i++) await fn();
    else for (let i = 0; i < 16; i++) fn();
  };
  for (const end = performance.now() + MS / 3; performance.now() < end; ) await batch();
  let best = 0;
  for (let run = 0; run < 3; run++) {
    let n = 0;
    const start = performance.now();
    while (performance.now() < start + MS) {
      await batch();
      n += 16;
    }
    best = Math.max(best, (n * 1000) / (performance.now() - start));
  }
  return best;
}

interface Row {
  group: string;
  name: string;
  ops: number;
  baseline?: number;
}
const rows: Row[] = [];

async function group(name: string, note: string, baseline: () => unknown, cases: Array<[string, () => unknown]>): Promise<void> {
  const base = await opsPerSecond(baseline);
  rows.push({ group: `${name} (${note})`, name: 'baseline: JSON.parse + JSON.stringify of the same data', ops: base });
  for (const [label, fn] of cases) rows.push({ group: `${name} (${note})`, name: label, ops: await opsPerSecond(fn), baseline: base });
}

// --- XML: an order of 20 lines ------------------------------------------------------------
const lines = Array.from({ length: 20 }, (_, i) => `<line sku="SKU-${i}" qty="${(i % 5) + 1}" price="${(9.5 + i).toFixed(2)}">Item ${i} &amp; more</line>`).join('');
const xmlText = `<?xml version="1.0" encoding="UTF-8"?><order id="A-17" date="2024-03-12"><customer><name>Zoë &amp; Co</name><email>zoe@example.org</email></customer><lines>${lines}</lines><note>Deliver before noon</note></order>`;
const xmlBytes = Buffer.from(xmlText);
const readXml = createXmlReader({ alwaysArray: ['lines.line'] });
const xmlPayload = readXml(xmlText);
const xmlJson = JSON.stringify(xmlPayload);
const rawParser = new XMLParser({ ignoreAttributes: false });
const rawBuilder = new XMLBuilder({ ignoreAttributes: false });
await group('xml', `order, 20 lines, ${xmlBytes.length} B`, () => JSON.stringify(JSON.parse(xmlJson)), [
  ['raw fast-xml-parser parse + build (no checks)', () => rawBuilder.build(rawParser.parse(xmlText))],
  ['xml plugin: bytes → payload → XML (validate, DOCTYPE check, strict entities)', () => buildXml(readXml(decodeXmlBytes(xmlBytes)))],
]);

// --- HL7: the ADT^A01 and ORU^R01 of the test corpus -----------------------------------------
for (const file of ['adt-a01.hl7', 'oru-r01.hl7']) {
  const bytes = readFileSync(new URL(`../test/fixtures/hl7/${file}`, import.meta.url));
  const text = bytes.toString('utf8');
  const json = JSON.stringify(parseHl7(text));
  await group('hl7', `${file}, ${bytes.length} B`, () => JSON.stringify(JSON.parse(json)), [
    ['hl7 codec: parse + serialize', () => serializeHl7(parseHl7(text))],
    ['hl7 plugin: bytes → payload (flat fields + structure) → ER7', () => serializeHl7(hl7Payload(decodeHl7Bytes(bytes)))],
    ['hl7 parse + buildAck', () => buildAck(parseHl7(text), 'AA', { controlId: 'X', now: new Date(0) })],
  ]);
}

// --- form: 20 fields, some repeated and escaped ---------------------------------------------
const formFields: Record<string, string | string[]> = {};
for (let i = 0; i < 18; i++) formFields[`field${i}`] = `value ${i} & ünïcode`;
formFields.tags = ['a', 'b', 'c'];
const formText = new URLSearchParams(Object.entries(formFields).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]))).toString();
const formJson = JSON.stringify(formFields);
await group('form', `20 fields, ${formText.length} B`, () => JSON.stringify(JSON.parse(formJson)), [
  ['URLSearchParams (WHATWG, lenient)', () => [...new URLSearchParams(formText)].length],
  ['form codec: parseForm', () => parseForm(formText)],
]);

// --- multipart: 3 fields and one 64 KiB file --------------------------------------------------
const form = new FormData();
for (let i = 0; i < 3; i++) form.append(`f${i}`, `value ${i}`);
const file = Buffer.alloc(64 * 1024, 7);
form.append('document', new Blob([file], { type: 'application/pdf' }), 'scan.pdf');
const res = new Response(form);
const contentType = res.headers.get('content-type')!;
const multipartBody = Buffer.from(await res.arrayBuffer());
const multipartJson = JSON.stringify({ f0: 'value 0', f1: 'value 1', f2: 'value 2', document: file.toString('base64') });
const limits = { maxFileBytes: 1 << 20, maxFiles: 10, maxFields: 10, maxFieldBytes: 1 << 20, maxTotalBytes: 1 << 21 };
await group('multipart', `3 fields + 64 KiB file, ${multipartBody.length} B (baseline: file as base64 in JSON)`, () => JSON.stringify(JSON.parse(multipartJson)), [
  ['multipart codec: busboy on the buffered body', () => parseMultipart(multipartBody, contentType, limits)],
]);

// --- CSV: 200 rows of 6 columns, some quoted ------------------------------------------------
const csvRecords = Array.from({ length: 200 }, (_, i) => ({ id: String(i), sku: `SKU-${i}`, name: i % 7 ? `Item ${i}` : `Item ${i}, "large"`, qty: String((i % 5) + 1), price: (9.5 + i).toFixed(2), city: 'Zoë-Düsseldorf' }));
const csvSettings = csvChannelSchema.parse({});
const writeCsv = createCsvWriter(csvSettings);
const readCsv = createCsvReader(csvSettings);
const csvBytes = Buffer.from(writeCsv(csvRecords));
const csvJson = JSON.stringify(csvRecords);
await group('csv', `200 rows × 6 columns, ${csvBytes.length} B`, () => JSON.stringify(JSON.parse(csvJson)), [
  ['raw csv-parse (columns: true, no caps) + our writer', () => writeCsv(rawCsvParse(csvBytes, { columns: true, bom: true }))],
  ['csv plugin: bytes → records → CSV (UTF-8 check, caps, formula escaping)', () => writeCsv(readCsv(csvBytes))],
]);

console.log('| format (document) | codec | ops/s | vs baseline |');
console.log('|---|---|---:|---:|');
for (const r of rows) {
  console.log(`| ${r.group} | ${r.name} | ${Math.round(r.ops).toLocaleString('en-US')} | ${r.baseline === undefined ? '1.00' : (r.ops / r.baseline).toFixed(2)} |`);
}
