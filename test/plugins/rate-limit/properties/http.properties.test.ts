import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { addressTextArb, bits128Arb, junkArb, refAddress, refCidr, refContains, spellingArb, spellIPv6, wall } from './reference.ts';

const ECHO = { 'echo.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n` };
const ZONE = 'Australia/Lord_Howe';
const CAP = 7;

const CONFIG = `
server: { timezone: ${ZONE} }
channel_rest:
  - name: fw
    url_path: /fw
    service: echo
    security: none
    rate_limiting:
      - cidr_list: [203.0.113.0/24, '2001:db8:bad::/48', '::ffff:198.51.100.0/120']
        time_range: [{ is_all_day: true, disallowed: true }]
      - cidr_list: [10.0.0.0/8, 'fd00::/8']
        time_range:
          - { is_all_day: true, rate: 5, burst: 5 }
          - { time_from: '22:00', time_to: '06:00', disallowed: true }
      - per_client: true
        time_range:
          - { is_all_day: true, rate: 2, burst: 3, limit: 20, limit_unit: minute }
          - { time_from: '12:00', time_to: '13:00', limit: 5, limit_unit: hour }
  - name: capped
    url_path: /capped
    service: echo
    security: none
    rate_limiting:
      - time_range: [{ is_all_day: true, limit: ${CAP}, limit_unit: minute }]
`;

const DENIED = ['203.0.113.0/24', '2001:db8:bad::/48', '198.51.100.0/24'].map((c) => refCidr(c)!);
const NIGHT_ONLY = ['10.0.0.0/8', 'fd00::/8'].map((c) => refCidr(c)!);

const T0 = Date.UTC(2026, 3, 4, 10);
const clock = new ManualClock(T0);
/** The latest time the clock has shown: the first property also moves it back, after counting requests at later times. */
let latest = T0;
let k: TestKernel;
let port: number;

beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: ECHO, clock, listen: true });
  port = Number(new URL(k.url!).port);
});
afterAll(() => k?.close());

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One GET on a fresh socket, header values sent as raw latin1 bytes (no client library
 * between us and the server to refuse or rewrite them); 'dropped' when the connection closed
 * without a byte of response.
 */
function send(path: string, headers: Array<[string, string]>): Promise<Reply | 'dropped'> {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  const lines = headers.map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.write(Buffer.from(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${lines}\r\n`, 'latin1'));
  return new Promise((resolve) =>
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString('latin1');
      if (raw.length === 0) return resolve('dropped');
      const split = raw.indexOf('\r\n\r\n');
      const [statusLine, ...headerLines] = raw.slice(0, split).split('\r\n');
      const parsed: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        parsed[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      let body = raw.slice(split + 4);
      if (parsed['transfer-encoding'] === 'chunked') {
        let out = '';
        for (let at = 0; ; ) {
          const eol = body.indexOf('\r\n', at);
          const size = parseInt(body.slice(at, eol), 16);
          if (!size) break;
          out += body.slice(eol + 2, eol + 2 + size);
          at = eol + 2 + size + 2;
        }
        body = out;
      }
      resolve({ status: Number(statusLine!.split(' ')[1]), headers: parsed, body });
    }),
  );
}

/** Printable latin1, as an HTTP header value may carry it. */
const headerCharArb = fc.oneof(
  fc.integer({ min: 0x20, max: 0x7e }),
  fc.integer({ min: 0x80, max: 0xff }),
  fc.constant(0x09),
).map((c) => String.fromCharCode(c));
const headerSafe = (s: string) => s.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?');

const hopArb = fc.oneof(
  { weight: 3, arbitrary: addressTextArb },
  { weight: 2, arbitrary: junkArb.map((s) => headerSafe(s).slice(0, 3_000)) },
  // Addresses the rules care about, spelled any way.
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...DENIED, ...NIGHT_ONLY), fc.bigInt({ min: 0n, max: (1n << 32n) - 1n }), spellingArb, fc.boolean()).map(([c, r, how, v4]) => {
    const bits = c.base | (r & ((1n << BigInt(128 - c.prefix)) - 1n));
    return v4 && bits >> 32n === 0xffffn ? [24n, 16n, 8n, 0n].map((s) => String((bits >> s) & 0xffn)).join('.') : spellIPv6(bits, how);
  }) },
  { weight: 1, arbitrary: bits128Arb.chain((bits) => spellingArb.map((how) => `[${spellIPv6(bits, how)}]:443`)) },
  { weight: 1, arbitrary: fc.array(headerCharArb, { maxLength: 60 }).map((cs) => cs.join('')) },
);

/** A forwarded header: absent, empty, one hop, many hops (odd separators included), or huge. */
const forwardedArb = fc.option(
  fc.oneof(
    { weight: 4, arbitrary: fc.array(hopArb, { minLength: 1, maxLength: 6 }).chain((hops) => fc.constantFrom(', ', ',', ' , ', ',,').map((sep) => hops.join(sep))) },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', ',', ', 203.0.113.9', 'unknown', '_hidden') },
    // Two of these stay under Node's 16 KiB header limit: past it Node answers 431 before the kernel sees the request.
    { weight: 1, arbitrary: fc.tuple(hopArb, fc.integer({ min: 50, max: 600 })).map(([hop, n]) => Array<string>(n).fill(hop).join(', ').slice(0, 7_000)) },
  ),
  { nil: undefined },
);

interface RequestSpec {
  path: '/fw' | '/capped';
  svc: string | undefined;
  xff: string | undefined;
}

const requestArb: fc.Arbitrary<RequestSpec> = fc.record({
  path: fc.constantFrom('/fw' as const, '/fw' as const, '/capped' as const),
  svc: forwardedArb,
  xff: forwardedArb,
});

/** How the clock moves before a batch: not at all, a little, a lot, across the local night, or back. */
const stepArb = fc.record({
  advance: fc.oneof(
    fc.constant(0),
    fc.integer({ min: 1, max: 2_000 }),
    fc.integer({ min: 2_000, max: 3 * 3_600_000 }),
    fc.integer({ min: -90_000, max: -1 }),
  ),
  batch: fc.array(requestArb, { minLength: 1, maxLength: 8 }),
});

/** The client address text the spec's item 6 names: the first non-empty of the headers' first hops, else the peer. */
function clientText(req: RequestSpec): string {
  const first = (h: string | undefined) => h?.trim().split(',')[0]?.trim() || undefined;
  return first(req.svc) ?? first(req.xff) ?? '127.0.0.1';
}

/**
 * The client's bits as the reference reads them; undefined where no claim is made: text that
 * is no address, and `::a.b.c.d`, which the kernel (ipaddr.js) rewrites as IPv4 before the
 * plugin sees it, as it does inet_aton spellings (its grammar, not the plugin's).
 */
function clientOf(req: RequestSpec): bigint | undefined {
  const text = clientText(req);
  if (/^::[0-9.]+(%|$)/.test(text)) return undefined;
  return refAddress(text);
}

/** Text no address grammar (the plugin's, or the kernel's inet_aton-tolerant one) reads as an address. */
const clearlyJunk = (req: RequestSpec) => /[^0-9A-Fa-f.:xX]/.test(clientText(req).split('%')[0]!);

const headersOf = (req: RequestSpec): Array<[string, string]> => [
  ...(req.svc === undefined ? [] : [['X-Svc-Forwarded-For', req.svc] as [string, string]]),
  ...(req.xff === undefined ? [] : [['X-Forwarded-For', req.xff] as [string, string]]),
];

function checkRefusal(reply: Reply): void {
  const cid = reply.headers['x-svc-cid'];
  expect(cid).toMatch(/^[0-9a-f]+$/);
  if (reply.status >= 400) {
    expect(JSON.parse(reply.body)).toEqual({ result: 'Error', cid, details: expect.any(String) });
  }
}

describe('forwarded headers and request rates over real sockets', () => {
  it('never give a 5xx; refusals are 429s with the error body and its CID, or a dropped connection exactly where the rules say', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 6 }), async (steps) => {
        for (const step of steps) {
          clock.advance(step.advance);
          const now = clock.now();
          latest = Math.max(latest, now);
          const replies = await Promise.all(step.batch.map((req) => send(req.path, headersOf(req))));
          replies.forEach((reply, i) => {
            const req = step.batch[i]!;
            const client = clientOf(req);
            const w = wall(ZONE, now);
            const night = w.hour >= 22 || w.hour < 6;
            const shouldDrop =
              client !== undefined && req.path === '/fw' && (DENIED.some((c) => refContains(c, client)) || (night && NIGHT_ONLY.some((c) => refContains(c, client))));
            const where = `${req.path} at ${new Date(now).toISOString()} with ${JSON.stringify(headersOf(req)).slice(0, 300)}`;
            if (reply === 'dropped') {
              expect(req.path, where).toBe('/fw');
              if (client !== undefined) expect(shouldDrop, where).toBe(true);
              // Such a client matches only rules with an empty list, and here those drop nobody.
              expect(clearlyJunk(req), where).toBe(false);
              return;
            }
            expect(shouldDrop, where).toBe(false);
            expect([200, 429], where).toContain(reply.status);
            checkRefusal(reply);
            if (reply.status === 429) {
              expect(reply.body, where).toContain('"details":"Too many requests"');
              expect(Date.parse(reply.headers['retry-after']!), where).toBeGreaterThan(now);
            }
          });
        }
      }),
      { numRuns: 100 },
    );
  });

  it('a shared cap admits exactly min(requests, cap) per calendar minute however requests bunch up', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ advance: fc.integer({ min: 0, max: 40_000 }), n: fc.integer({ min: 1, max: 12 }) }), { minLength: 1, maxLength: 6 }),
        async (steps) => {
          // A fresh minute, so earlier runs' requests do not count: past the latest time any
          // request was counted at (the clock here only moves forward).
          clock.set(Math.ceil(Math.max(clock.now(), latest) / 60_000) * 60_000 + 60_000);
          const perWindow = new Map<number, { sent: number; admitted: number }>();
          for (const step of steps) {
            clock.advance(step.advance);
            const window = Math.floor(clock.now() / 60_000);
            const replies = await Promise.all(Array.from({ length: step.n }, () => send('/capped', [])));
            const tally = perWindow.get(window) ?? { sent: 0, admitted: 0 };
            for (const reply of replies) {
              expect(reply).not.toBe('dropped');
              if (reply === 'dropped') continue;
              expect([200, 429]).toContain(reply.status);
              checkRefusal(reply);
              tally.sent++;
              if (reply.status === 200) {
                tally.admitted++;
                expect(Number(reply.headers['x-ratelimit-remaining'])).toBeGreaterThanOrEqual(0);
              }
            }
            perWindow.set(window, tally);
          }
          for (const { sent, admitted } of perWindow.values()) expect(admitted).toBe(Math.min(sent, CAP));
        },
      ),
      { numRuns: 25 },
    );
  });
});
