/**
 * Channel req/s of the XML, HL7 and CSV formats against a JSON channel, same server, same run:
 * each channel parses a request body, runs a service that answers from a few input fields,
 * and serializes the answer in its own format. The last row posts the hl7 channel's parsed
 * payload to a JSON channel, separating the cost of moving it into the sandbox from parsing.
 * Run: node --import tsx bench/formats-http.ts   (prints a markdown table)
 */
import { readFileSync } from 'node:fs';
import { load, printTable, withSvc, type Row } from './lib.ts';
import { hl7Payload } from '../plugins/formats/hl7/plugin.ts';

const ADT = readFileSync(new URL('../test/fixtures/hl7/adt-a01.hl7', import.meta.url), 'utf8');

const SERVICES = {
  'order.js': `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => ({ confirmation: { id: ctx.input.id ?? ctx.input['@id'], customer: ctx.input.customer, status: 'accepted' } }) });`,
  'lines.js': `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => [{ id: ctx.input.id, lines: ctx.payload.length, status: 'accepted' }] });`,
  'adt.js': `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => ({ segments: [
  { name: 'MSH', fields: ['|', '^~\\\\&', ctx.input['MSH.5'], ctx.input['MSH.6'], ctx.input['MSH.3'], ctx.input['MSH.4'], '20240101', '', [['ACK', ctx.input['MSH.9.2'], 'ACK']], 'A1', 'P', ctx.input['MSH.12']] },
  { name: 'MSA', fields: ['AA', ctx.input['MSH.10']] },
] }) });`,
};

const CONFIG = {
  channel_rest: [
    { name: 'json', url_path: '/json', service: 'order', security: 'none', data_format: 'json' },
    { name: 'xml', url_path: '/xml', service: 'order', security: 'none', data_format: 'xml' },
    { name: 'csv', url_path: '/csv/{id}', service: 'lines', security: 'none', data_format: 'csv' },
    { name: 'hl7', url_path: '/hl7', service: 'adt', security: 'none', data_format: 'hl7' },
    { name: 'hl7.json', url_path: '/hl7.json', service: 'order', security: 'none', data_format: 'json' },
  ],
};

const order = { id: 'A-17', customer: 'Zoë & Co', lines: [{ sku: 'X1', qty: 2 }, { sku: 'X2', qty: 1 }] };
const orderXml = '<order id="A-17"><customer>Zoë &amp; Co</customer><lines><line sku="X1" qty="2"/><line sku="X2" qty="1"/></lines></order>';

const orderCsv = 'sku,qty\r\nX1,2\r\nX2,1\r\n';

const rows: Row[] = await withSvc(CONFIG, SERVICES, async (t) => {
  const post = (path: string, body: string, type: string) => load(`${t.url}${path}`, { method: 'POST', body, headers: { 'content-type': type } });
  const json = await post('/json', JSON.stringify(order), 'application/json');
  const xml = await post('/xml', orderXml, 'application/xml');
  const csv = await post('/csv/A-17', orderCsv, 'text/csv');
  const hl7 = await post('/hl7', ADT, 'x-application/hl7-v2+er7');
  // The hl7 channel's payload posted as JSON: what moving that much data into the sandbox costs alone.
  const hl7AsJson = await post('/hl7.json', JSON.stringify(hl7Payload(ADT)), 'application/json');
  return [
    { name: 'json channel: order in, JSON out (baseline)', load: json, ratio: 1 },
    { name: 'xml channel: same order as XML in, XML out', load: xml, ratio: xml.rps / json.rps },
    { name: 'csv channel: the order lines as CSV in (id in the URL), a one-row CSV out', load: csv, ratio: csv.rps / json.rps },
    { name: 'hl7 channel: ADT^A01 (959 B) in, ACK message out', load: hl7, ratio: hl7.rps / json.rps },
    { name: 'json channel: the parsed ADT^A01 payload posted as JSON (no HL7 parsing)', load: hl7AsJson, ratio: hl7AsJson.rps / json.rps, note: 'payload size, not HL7 parsing, sets the hl7 pace' },
  ];
});
printTable('Formats: channel req/s against a JSON channel', rows, 'vs json');
