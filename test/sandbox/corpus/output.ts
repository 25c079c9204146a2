import { expect } from 'vitest';
import { FORGED, OUTPUT_REFUSED, svc, type CorpusCase, type CorpusResponse } from './types.ts';

/** No raw header line of that name went out. */
const noHeader = (name: string) => (_j: unknown, res: CorpusResponse) => {
  const lines = (res.rawHeaderLines ?? []).filter((l) => l.toLowerCase().startsWith(name.toLowerCase() + ':'));
  expect(lines, `header ${name} was written`).toEqual([]);
};

/** `hidden`: a header name that must not appear among the header lines Node wrote. */
function refused(name: string, file: string, body: string, hidden?: string): CorpusCase {
  return {
    name,
    file,
    code: svc(`${body}\nreturn { ok: true };`),
    transport: 'socket',
    note: hidden === undefined ? undefined : `no \`${hidden}\` header line is written`,
    expect: { status: 500, details: OUTPUT_REFUSED, bodyCheck: hidden === undefined ? undefined : noHeader(hidden), withinMs: 2000 },
  };
}

/** Sent as the service meant it (decisions in docs/decisions/kernel.md); `check` looks at the raw header lines. */
function sent(name: string, file: string, body: string, check: (lines: string[]) => void): CorpusCase {
  return {
    name,
    file,
    code: svc(`${body}\nreturn { ok: true };`),
    transport: 'socket',
    expect: { status: 200, bodyCheck: (_j, res) => check(res.rawHeaderLines ?? []), withinMs: 2000 },
  };
}

/**
 * Output: what a service controls (status, headers, content type) is checked on the host side;
 * a bad value is svc's own 500 with the CID, never Node's or Fastify's error, never a hang.
 * Sent over a real socket so the headers are seen as Node writes them.
 */
export const output: CorpusCase[] = [
  refused('status 1000', 'out-status-1000.js', 'ctx.response.status = 1000;'),
  refused('status 99', 'out-status-99.js', 'ctx.response.status = 99;'),
  refused('status 200.5 (not an integer)', 'out-status-float.js', 'ctx.response.status = 200.5;'),
  refused('status NaN', 'out-status-nan.js', 'ctx.response.status = NaN;'),
  refused("status '404' (a string)", 'out-status-string.js', "ctx.response.status = '404';"),
  // The runtime reads the status once: what the getter gave then is the status, and it is valid.
  sent(
    'status getter: 200 on the first read, 1000 after (read once: 200)',
    'out-status-getter.js',
    "let reads = 0; Object.defineProperty(ctx.response, 'status', { get: () => (reads++ === 0 ? 200 : 1000), enumerable: true });",
    () => undefined,
  ),
  sent(
    'status getter that turns to 1000 after the range check (read once: 200)',
    'out-status-toctou.js',
    "let reads = 0; Object.defineProperty(ctx.response, 'status', { get: () => (reads++ < 3 ? 200 : 1000), enumerable: true });",
    () => undefined,
  ),
  refused('header name with a space', 'out-hdr-space.js', "ctx.response.headers['bad name'] = 'x';", 'bad name'),
  refused('header name that is not ASCII', 'out-hdr-utf8.js', "ctx.response.headers['x-caf\u00e9'] = 'x';"),
  refused('CR/LF injection in a header value', 'out-hdr-crlf.js', "ctx.response.headers['x-a'] = 'ok\\r\\nset-cookie: evil=1';", 'set-cookie'),
  refused('bare LF in a header value', 'out-hdr-lf.js', "ctx.response.headers['x-a'] = 'ok\\nx-injected: 1';", 'x-injected'),
  refused('header value outside Latin-1 (U+2028)', 'out-hdr-u2028.js', "ctx.response.headers['x-a'] = 'a\\u2028b';"),
  refused(
    "__proto__ key from JSON.parse: '{\"__proto__\": {\"bad name\": \"x\"}}'",
    'out-hdr-proto-json.js',
    'ctx.response.headers = JSON.parse(\'{"__proto__": {"bad name": "x"}}\');',
    'bad name',
  ),
  refused(
    "__proto__ key carrying a kernel-owned name: '{\"__proto__\": {\"x-svc-cid\": ...}}'",
    'out-hdr-proto-cid.js',
    `ctx.response.headers = JSON.parse('{"__proto__": {"x-svc-cid": "${FORGED}"}}');`,
  ),
  // Only own names cross the sandbox (as JSON does): an inherited one is not a header at all.
  sent("inherited header names: Object.create({'x y': 1}) (not sent)", 'out-hdr-inherited.js', "ctx.response.headers = Object.create({ 'x y': 1 });", (lines) =>
    expect(lines.filter((l) => l.toLowerCase().startsWith('x y'))).toEqual([]),
  ),
  sent('header value that is a number (sent as text)', 'out-hdr-number.js', "ctx.response.headers['x-n'] = 5;", (lines) =>
    expect(lines.filter((l) => l.toLowerCase().startsWith('x-n:'))).toEqual(['x-n: 5']),
  ),
  refused('header value that is an array', 'out-hdr-array.js', "ctx.response.headers['x-a'] = ['a', 'b'];", 'x-a'),
  refused('header value that is an object', 'out-hdr-object.js', "ctx.response.headers['x-o'] = { a: 1 };", 'x-o'),
  refused('header value null', 'out-hdr-null.js', "ctx.response.headers['x-z'] = null;", 'x-z'),
  refused('headers that are a string, not an object', 'out-hdr-string.js', "ctx.response.headers = 'x-a: 1';", '0'),
  refused('a service cannot replace X-Svc-CID', 'out-hdr-cid.js', `ctx.response.headers['x-svc-cid'] = '${FORGED}';`),
  refused('a service cannot replace X-Svc-CID (mixed case)', 'out-hdr-cid-case.js', `ctx.response.headers['X-Svc-CID'] = '${FORGED}';`),
  refused('kernel-owned header content-length', 'out-hdr-content-length.js', "ctx.response.headers['content-length'] = '1';"),
  refused('kernel-owned header transfer-encoding', 'out-hdr-te.js', "ctx.response.headers['transfer-encoding'] = 'chunked';"),
  refused('kernel-owned header connection', 'out-hdr-connection.js', "ctx.response.headers['connection'] = 'upgrade';"),
  refused('kernel-owned header keep-alive', 'out-hdr-keep-alive.js', "ctx.response.headers['keep-alive'] = 'timeout=99999';", 'keep-alive'),
  refused('kernel-owned header upgrade', 'out-hdr-upgrade.js', "ctx.response.headers['upgrade'] = 'websocket';", 'upgrade'),
  refused('kernel-owned header trailer', 'out-hdr-trailer.js', "ctx.response.headers['trailer'] = 'x-checksum';", 'trailer'),
  refused('CR/LF injection in contentType', 'out-ctype-crlf.js', "ctx.response.contentType = 'text/html\\r\\nset-cookie: evil=1';", 'set-cookie'),
  refused('contentType that is not a string', 'out-ctype-object.js', 'ctx.response.contentType = { toString() { return "text/html" } };'),
  {
    name: 'X-Svc-CID set by a service that then throws NotFound: the error reply keeps the real CID',
    file: 'out-hdr-cid-throw.js',
    code: svc(`ctx.response.headers['x-svc-cid'] = '${FORGED}'; throw new NotFound('nope');`),
    transport: 'socket',
    expect: { status: [404, 500], withinMs: 2000 },
  },
];
