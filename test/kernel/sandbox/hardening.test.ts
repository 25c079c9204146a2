import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { waitFor } from '../../helpers/wait.ts';
import { cpuMs } from '../../helpers/proc.ts';
import { CALL_MARGIN_MS } from '../../../kernel/sandbox/pool.ts';

/**
 * What a hostile service can do to the kernel around its sandbox: forge results, crash its
 * process under load, crash-loop at deploy, leave work running, send output Node would refuse.
 * One sandbox process, so every service here shares it with its neighbours.
 */
const svc = (body: string, opts = '', top = '') =>
  `import { service, publish } from 'svc/sdk';\n${top}\nexport default service({ limits: { timeoutMs: 500, memoryMb: 32 }, ${opts} async handle(ctx) { ${body} } });`;

/** The time limit of never.js. */
const NEVER_LIMIT_MS = 300;

const services: Record<string, string> = {
  'ok.js': svc(`return { ok: true };`),
  // The crash tests' neighbour: /ok with room, so a crasher's page-fault storm on a slow machine
  // (the call waiting for a CPU past 500 ms) does not pass for a neighbour the crash failed.
  'neighbour.js': svc(`return { ok: true };`).replace('timeoutMs: 500', 'timeoutMs: 5000'),
  // A thenable whose `then` returns another thenable: the runtime must never hand its own callback over.
  'forge.js': `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 500 }, handle() {
  return { then(ok) { ok({ fine: true }); return { then(cb) { cb('garbage\\n7\\t{"status":200}\\nnot json\\n'); } }; } };
} });`,
  'forge-raw.js': `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 500 }, handle() { return { then(ok) { ok('line\\nbreak\\tand tab'); ok('twice'); } }; } });`,
  'never.js': `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: ${NEVER_LIMIT_MS} }, handle() { return { then() {} }; } });`,
  // Crashers get room to reach V8's fatal paths rather than the time limit.
  'split.js': svc(`return '1'.repeat(0xfffffff).split('');`).replace('timeoutMs: 500, memoryMb: 32', 'timeoutMs: 8000, memoryMb: 128'),
  'fill.js': svc(`return new Array(60e6).fill(0).length;`).replace('timeoutMs: 500, memoryMb: 32', 'timeoutMs: 8000, memoryMb: 128'),
  'mapfill.js': svc(`const m = new Map(); for (let i = 0; ; i++) m.set(i, { i }); `).replace('timeoutMs: 500, memoryMb: 32', 'timeoutMs: 8000, memoryMb: 128'),
  'status-high.js': svc(`ctx.response.status = 1000; return 'x';`),
  'status-getter.js': svc(`let n = 0; Object.defineProperty(ctx.response, 'status', { get() { n++; return n === 1 ? 200 : 1000; } }); return 'x';`),
  'status-nan.js': svc(`ctx.response.status = NaN; return 'x';`),
  'hdr-cid.js': svc(`ctx.response.headers['X-Svc-CID'] = 'forged'; return 'x';`),
  'hdr-length.js': svc(`ctx.response.headers['content-length'] = '1'; return 'x';`),
  'hdr-te.js': svc(`ctx.response.headers['Transfer-Encoding'] = 'chunked'; return 'x';`),
  'hdr-conn.js': svc(`ctx.response.headers['connection'] = 'upgrade'; return 'x';`),
  'hdr-crlf.js': svc(`ctx.response.headers['x-a'] = 'a\\r\\nSet-Cookie: evil=1'; return 'x';`),
  'hdr-name.js': svc(`ctx.response.headers['bad name'] = 'v'; return 'x';`),
  'hdr-proto.js': svc(`ctx.response.headers = JSON.parse('{"__proto__": {"bad name": "x"}, "x-ok": "1"}'); return 'x';`),
  'hdr-inherited.js': svc(`ctx.response.headers = Object.create({ 'bad name': 'x' }); ctx.response.headers['x-ok'] = '1'; return 'x';`),
  'hdr-number.js': svc(`ctx.response.headers['x-count'] = 3; return 'x';`),
  'hdr-object.js': svc(`ctx.response.headers['x-obj'] = { a: 1 }; return 'x';`),
  'after.js': svc(`(async () => { for (;;) await null; })(); return { returned: true };`),
  'spam.js': svc(`let refused = 0; for (let i = 0; i < 20000; i++) { try { await publish('/not/allowed', 'x'); } catch { refused++; } } return { refused };`).replace('timeoutMs: 500', 'timeoutMs: 20000'),
  // Host-call arguments past the wire's line limit (2 × max_output_bytes + 8 MiB: 40 MiB here).
  'huge-args.js': svc(`const big = 'x'.repeat(45 << 20); try { await publish('/t', big); return { sent: true }; } catch (e) { return { error: String(e.message), status: e.status, name: e.name }; }`).replace('timeoutMs: 500, memoryMb: 32', 'timeoutMs: 8000, memoryMb: 256'),
  'logs.js': svc(`for (let i = 0; i < 5000; i++) ctx.log.info('line ' + i + ' ' + 'x'.repeat(20000)); return 'logged';`),
};

const config = `
channel_rest:
${Object.keys(services)
  .map((f) => f.replace('.js', ''))
  .map((n) => `  - { name: ${n}, url_path: /${n}, service: ${n}, security: none }`)
  .join('\n')}
`;

const logs: Array<Record<string, unknown>> = [];
let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config, services, listen: true, logs });
}, 60_000);
afterAll(() => k?.close());

async function get(path: string): Promise<{ status: number; cid: string | null; body: string; json: () => Record<string, unknown> }> {
  const res = await fetch(k.url + path);
  const body = await res.text();
  return { status: res.status, cid: res.headers.get('x-svc-cid'), body, json: () => JSON.parse(body) as Record<string, unknown> };
}

function expectError(r: Awaited<ReturnType<typeof get>>, status: number, details?: string | RegExp): void {
  expect(r.status).toBe(status);
  expect(r.cid).toMatch(/^[0-9a-f]+$/);
  const body = r.json();
  expect(body.result).toBe('Error');
  expect(body.cid).toBe(r.cid);
  if (typeof details === 'string') expect(body.details).toBe(details);
  else if (details) expect(body.details).toMatch(details);
}

describe('host calls too large for the wire', () => {
  it('are refused inside the sandbox process with a PayloadTooLarge the service can catch; the process is not stopped', async () => {
    const pid = k.kernel.pool.pids()[0]!;
    const r = await get('/huge-args');
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ name: 'PayloadTooLarge', status: 413, error: expect.stringMatching(/exceed the sandbox's limit/) });
    expect(k.kernel.pool.pids()[0]).toBe(pid);
    expect(logs.some((l) => String(l.msg).includes('broke the wire protocol'))).toBe(false);
    expect((await get('/ok')).status).toBe(200);
  });
});

describe('results the sandbox sends back are checked, and cannot be forged', () => {
  it('a thenable handing the result callback raw lines gets its own value back; the server lives', async () => {
    const r = await get('/forge');
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ fine: true });
    expect((await get('/ok')).status).toBe(200);
  });

  it('a thenable that resolves twice with text holding line breaks: the first value, as it was', async () => {
    const r = await get('/forge-raw');
    expect(r.status).toBe(200);
    expect(r.json()).toBe('line\nbreak\tand tab');
  });

  it('a thenable that never settles is answered at the time limit', async () => {
    const started = Date.now();
    expectError(await get('/never'), 503, 'Service exceeded its time limit');
    const ms = Date.now() - started;
    // The deadline is the claim: not before the limit, and by the limit plus the pool's margin,
    // twice over for a loaded machine's timers (a call left hanging would never be answered).
    expect(ms).toBeGreaterThanOrEqual(NEVER_LIMIT_MS);
    expect(ms).toBeLessThan((NEVER_LIMIT_MS + CALL_MARGIN_MS) * 2);
  });

  it.each(['status-high', 'status-nan'])('%s: an invalid status is a 500 with the CID', async (name) => {
    expectError(await get(`/${name}`), 500, /^Invalid service output: response status .* is not an integer from 100 to 599$/);
  });

  it('a status getter is read once: the status it gave first is the one sent', async () => {
    const r = await get('/status-getter');
    expect(r.status).toBe(200);
    expect(r.json()).toBe('x');
  });

  it.each([
    ['hdr-cid', /set by the server/],
    ['hdr-length', /set by the server/],
    ['hdr-te', /set by the server/],
    ['hdr-conn', /set by the server/],
    ['hdr-crlf', /invalid value for response header 'x-a'/],
    ['hdr-name', /invalid response header name 'bad name'/],
    ['hdr-object', /must be a string/],
  ])('%s: a header the kernel owns or Node refuses is a 500 from svc, with the CID', async (name, details) => {
    const r = await get(`/${name}`);
    expectError(r, 500, details);
    expect(r.cid).not.toBe('forged');
  });

  it('a header object with a __proto__ key or inherited names sends only its own valid headers', async () => {
    const proto = await get('/hdr-proto');
    expectError(proto, 500, /response header '__proto__' must be a string/);
    const inherited = await fetch(k.url + '/hdr-inherited');
    expect(inherited.status).toBe(200);
    expect(inherited.headers.get('x-ok')).toBe('1');
    expect([...inherited.headers.keys()].some((n) => n.includes(' '))).toBe(false);
  });

  it('numbers as header values are sent as text', async () => {
    const r = await fetch(k.url + '/hdr-number');
    expect(r.status).toBe(200);
    expect(r.headers.get('x-count')).toBe('3');
  });
});

describe('work a service leaves behind', () => {
  it('a microtask chain started by a handler is stopped at the call limit, and the process goes idle', async () => {
    const r = await get('/after');
    expect(r.status).toBe(200);
    const pid = k.kernel.pool.pids()[0]!;
    // Past the call's limit the watchdog disposes the isolate and says so; from then on the
    // sandbox process must be idle.
    await waitFor('the watchdog to stop the work left running', () => logs.some((l) => l.service === 'after' && String(l.msg).includes('kept running after its calls ended')), 10_000);
    const before = cpuMs(pid)!;
    await new Promise((res) => setTimeout(res, 500));
    const used = cpuMs(pid)! - before;
    expect(used).toBeLessThan(150); // under 30 % of one core
    expect((await get('/after')).status).toBe(200);
  });
});

describe('logging is bounded on every route a service logs through', () => {
  it('20,000 refused publish() calls in one request are counted in one line', async () => {
    const before = logs.length;
    const r = await get('/spam');
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ refused: 20000 });
    const summary = await waitFor('the refused host calls summary', () => logs.slice(before).find((l) => String(l.msg).includes('host calls refused')), 10_000);
    expect(summary.refused).toEqual({ 'pubsub.publish': 20000 });
    expect(logs.slice(before).filter((l) => l.cid === r.cid).length).toBeLessThanOrEqual(5);
  });

  it('ctx.log keeps at most 200 lines of at most 8 KiB per call', async () => {
    const before = logs.length;
    expect((await get('/logs')).status).toBe(200);
    const lines = logs.slice(before).filter((l) => l.service === 'logs' && String(l.msg).startsWith('line '));
    expect(lines.length).toBe(200);
    expect(Math.max(...lines.map((l) => String(l.msg).length))).toBeLessThanOrEqual(8192);
  });
});

describe('a sandbox process that dies under load', () => {
  it.each(['split', 'fill', 'mapfill'])(
    '%s: neighbours called in a loop get 200 or the documented 503; the kernel lives; the process restarts',
    async (crasher) => {
      // The neighbours call from before the crasher is sent until after it is answered: by
      // order, not for a fixed time, so they surround the crash however long it takes.
      let crashAnswered = false;
      const outcomes: Array<{ status: number; details?: unknown; cid: string | null }> = [];
      const neighbour = async () => {
        while (!crashAnswered) {
          const r = await get('/neighbour');
          outcomes.push({ status: r.status, cid: r.cid, details: r.status === 200 ? undefined : r.json().details });
        }
      };
      const loops = Array.from({ length: 8 }, neighbour);
      await waitFor('every neighbour loop to be answered once', () => outcomes.length >= loops.length, 10_000);
      const crash = await get(`/${crasher}`);
      crashAnswered = true;
      await Promise.all(loops);
      expect([500, 503]).toContain(crash.status);
      expect(crash.json().cid).toBe(crash.cid);
      // Which limit V8 reaches first depends on the machine's load: the process dying, the heap cap, or the clock.
      expect(crash.json().details).toMatch(/sandbox crashed|memory limit|time limit/);
      for (const o of outcomes) {
        expect(o.cid).toBeTruthy();
        if (o.status !== 200) {
          expect(o.status).toBe(503);
          expect(o.details).toMatch(/sandbox crashed|No sandbox process was ready/);
        }
      }
      expect(outcomes.filter((o) => o.status === 200).length).toBeGreaterThan(10);
      // A crasher stopped by its time limit may still take its process down while that limit
      // disposes the isolate, after the loops ended: the restart then follows, and /ok answers again.
      const restartBy = Date.now() + 10_000;
      let after = await get('/neighbour');
      while (after.status !== 200 && Date.now() < restartBy) {
        expect(after.status).toBe(503);
        expect(after.json().details).toMatch(/sandbox crashed|No sandbox process was ready/);
        await new Promise((res) => setTimeout(res, 100));
        after = await get('/neighbour');
      }
      expect(after.status).toBe(200);
    },
    30_000,
  );
});
