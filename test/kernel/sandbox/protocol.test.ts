import { socketpair } from './socketpair.ts';
import { describe, expect, it, vi } from 'vitest';
import { parseInvokeResult, readSandboxMessage } from '../../../kernel/sandbox/protocol.ts';
import { quickHeader, TURN_BUDGET_MS, Wire } from '../../../kernel/sandbox/wire.ts';

describe('result envelopes from a sandbox', () => {
  it('accepts a well-formed result and builds headers without a prototype', () => {
    const r = parseInvokeResult('{"status":201,"headers":{"x-a":"1","x-n":2},"contentType":"text/plain","body":"hi","logs":[["info","x"]]}');
    expect(r).toMatchObject({ status: 201, contentType: 'text/plain', body: 'hi', logs: [['info', 'x']] });
    if ('invalid' in r) throw new Error(r.invalid);
    expect(Object.getPrototypeOf(r.headers)).toBeNull();
    expect({ ...r.headers }).toEqual({ 'x-a': '1', 'x-n': '2' });
  });

  it.each([
    ['not json', 'not JSON'],
    ['[1]', 'not an object'],
    ['{"status":99}', 'status 99'],
    ['{"status":200.5}', 'status 200.5'],
    ['{"status":"200"}', 'status string'],
    ['{"status":200,"headers":[]}', 'must be an object'],
    ['{"status":200,"headers":{"x y":"v"}}', "name 'x y'"],
    ['{"status":200,"headers":{"x-a":"a\\r\\nb"}}', "value for response header 'x-a'"],
    ['{"status":200,"headers":{"X-Svc-CID":"forged"}}', 'set by the server'],
    ['{"status":200,"headers":{"__proto__":{"x":"y"}}}', "'__proto__' must be a string"],
    ['{"status":200,"contentType":"a\\nb"}', 'content type'],
    ['{"status":200,"bodyEncoding":"hex","body":"00"}', 'binary'],
    ['{"status":500,"error":{"kind":"Nope","message":"x"}}', 'service error'],
  ])('refuses %s', (text, why) => {
    const r = parseInvokeResult(text);
    expect('invalid' in r && r.invalid).toContain(why);
  });

  it('takes a body sent apart as text only when the request asked for it, and parses it otherwise', () => {
    const text = '{"status":200,"headers":{},"contentType":"application/vnd.x+json"}\t{"a":[1,"\\t"]}';
    const asked = parseInvokeResult(text, true);
    if ('invalid' in asked) throw new Error(asked.invalid);
    expect(asked).toMatchObject({ status: 200, contentType: 'application/vnd.x+json', bodyJson: '{"a":[1,"\\t"]}' });
    expect(asked.body).toBeUndefined();
    const unasked = parseInvokeResult(text);
    if ('invalid' in unasked) throw new Error(unasked.invalid);
    expect(unasked.bodyJson).toBeUndefined();
    expect(unasked.body).toEqual({ a: [1, '\t'] });
  });

  it.each([
    ['{"status":200,"body":1}\t{"a":1}', true, 'has another body'],
    ['{"status":200,"bodyEncoding":"base64"}\t"eA=="', true, 'has another body'],
    ['{"status":500,"error":{"kind":"Error","message":"m"}}\t{}', true, 'has another body'],
    ['{"status":200}\t', true, 'an empty JSON body'],
    ['{"status":200}\t{"a":', false, 'not JSON'],
    ['{"status":200\t{"a":1}', true, 'not JSON'],
    ['{"status":99}\t{"a":1}', true, 'not an integer from 100 to 599'],
  ])('refuses a body apart that does not fit: %s', (text, asked, why) => {
    const r = parseInvokeResult(text, asked);
    expect('invalid' in r && r.invalid).toContain(why);
  });

  it('reads the plain 200 with its body apart without parsing, as the full check would', () => {
    const text = '{"status":200,"headers":{},"logs":[]}\t{"hello":"world"}';
    const quick = parseInvokeResult(text, true);
    if ('invalid' in quick) throw new Error(quick.invalid);
    expect(quick).toEqual({ status: 200, headers: {}, bodyJson: '{"hello":"world"}' });
    expect(Object.getPrototypeOf(quick.headers)).toBeNull();
    // Not asked for the body apart: parsed, as before.
    expect(parseInvokeResult(text)).toMatchObject({ status: 200, body: { hello: 'world' } });
    // Anything else about it goes the long way, and is refused where it does not fit.
    expect(parseInvokeResult('{"status":200,"headers":{},"logs":[]}\t', true)).toEqual({ invalid: 'an empty JSON body' });
    expect(parseInvokeResult('{"status":200,"headers":{},"logs":[] }\t{}', true)).toMatchObject({ status: 200, bodyJson: '{}' });
  });

  it('trims logs and long error messages instead of refusing them', () => {
    const logs = Array.from({ length: 300 }, (_, i) => ['info', 'x'.repeat(i === 0 ? 10_000 : 1)]).concat([['nope', 'x'], [1, 2]] as never);
    const r = parseInvokeResult(JSON.stringify({ status: 500, error: { kind: 'BadRequest', message: 'm'.repeat(10_000) }, logs }));
    if ('invalid' in r) throw new Error(r.invalid);
    expect(r.logs).toHaveLength(200);
    expect(r.logs![0]![1]).toHaveLength(8192);
    expect(r.error!.message.length).toBeLessThan(4100);
  });
});

describe('sandbox → kernel message headers', () => {
  it('knows the kinds and refuses the rest', () => {
    expect(readSandboxMessage({ t: 'result', id: 3 })).toEqual({ t: 'result', id: 3 });
    expect(readSandboxMessage({ t: 'result', id: 3, fail: 'SERVICE_TIMEOUT' })).toBeTruthy();
    expect(readSandboxMessage({ t: 'result', id: 3, fail: 'INTERNAL' })).toBeUndefined();
    expect(readSandboxMessage({ t: 'result', id: -1 })).toBeUndefined();
    expect(readSandboxMessage({ t: 'hostcall', id: 1, seq: 1, op: 'x'.repeat(201) })).toBeUndefined();
    expect(readSandboxMessage({ t: 'nope' })).toBeUndefined();
    expect(readSandboxMessage('string')).toBeUndefined();
  });

  it('reads a host call by hand as the schema would: ids, sequence and operation checked, nothing else kept', () => {
    expect(readSandboxMessage({ t: 'hostcall', id: 1, seq: 2, op: 'service.invoke' })).toEqual({ t: 'hostcall', id: 1, seq: 2, op: 'service.invoke' });
    expect(readSandboxMessage({ t: 'hostcall', id: 1, seq: 2, op: 'x', extra: { big: true } })).toEqual({ t: 'hostcall', id: 1, seq: 2, op: 'x' });
    for (const bad of [{ seq: 0 }, { seq: 1.5 }, { seq: '2' }, { op: '' }, { op: 7 }, { id: 2 ** 53 }, { id: 0 }]) {
      expect(readSandboxMessage({ t: 'hostcall', id: 1, seq: 2, op: 'x', ...bad })).toBeUndefined();
    }
  });
});

describe('message headers read without JSON.parse', () => {
  it('reads what JSON.parse would, and leaves every other text to it', () => {
    const read = ['{"t":"result","id":7}', '{"t":"call","id":1234567,"svc":"hello"}', '{"t":"call","id":0,"svc":"a b/é€😀"}', '{"t":"ready","id":10}'];
    for (const text of read) expect(quickHeader(text, text.length)).toEqual(JSON.parse(text));
    const left = [
      '{"t":"result","id":07}', // a leading zero: not JSON
      '{"t":"result","id":1234567890123456}', // past 15 digits
      '{"t":"result","id":-1}',
      '{"t":"result","id":1.5}',
      '{"t":"Result","id":1}',
      '{"t":"result","id":1,"fail":"X"}',
      '{"t":"result", "id":1}',
      '{"t":"result","id":1}x',
      '{"t":"result","id":}',
      '{"t":"","id":1}',
      '{"t":"call","id":1,"svc":"a\\"b"}',
      '{"t":"call","id":1,"svc":"a\\u0041"}',
      '{"t":"call","id":1,"svc":""}',
      '{"t":"call","id":1,"svc":"a"',
      '{"t":"call","id":1,"svc":"a\tb"}',
      '{"t":"ready"}',
    ];
    for (const text of left) expect(quickHeader(text, text.length), text).toBeUndefined();
    // Only the header part of a line counts.
    const line = '{"t":"result","id":3}\t{"status":200}';
    expect(quickHeader(line, line.indexOf('\t'))).toEqual({ t: 'result', id: 3 });
  });
});

describe('the wire', () => {
  it('reports a line that is not JSON instead of throwing, and reads nothing after it', async () => {
    const [a, b] = await socketpair();
    const got: unknown[] = [];
    const violations: string[] = [];
    new Wire(a, { maxLine: 1000, onMessage: (h) => got.push(h), onViolation: (why) => violations.push(why) });
    b.write('{"t":"ready"}\nnot json\n{"t":"ready"}\n');
    // Waits for the violation itself (bounded), not a fixed time for the bytes to cross.
    await vi.waitFor(() => expect(violations).toHaveLength(1), { timeout: 5_000 });
    expect(got).toEqual([{ t: 'ready' }]);
    expect(violations).toEqual(['a message header is not JSON']);
    a.destroy();
    b.destroy();
  });

  it('reports a line longer than its cap', async () => {
    const [a, b] = await socketpair();
    const violations: string[] = [];
    new Wire(a, { maxLine: 100, onMessage: () => undefined, onViolation: (why) => violations.push(why) });
    b.write('x'.repeat(500));
    // Waits for the violation itself (bounded), not a fixed time for the bytes to cross.
    await vi.waitFor(() => expect(violations).toHaveLength(1), { timeout: 5_000 });
    expect(violations).toEqual(['a message exceeds 100 characters']);
    a.destroy();
    b.destroy();
  });

  it('delivers whole, in order, what one side sends: many messages in a tick, multi-byte text, and large messages between small ones', async () => {
    const [a, b] = await socketpair();
    const got: Array<[unknown, string]> = [];
    new Wire(a, { maxLine: 1 << 24, onMessage: (h, body) => got.push([h, body]), onViolation: (why) => expect.fail(why) });
    const sender = new Wire(b, { maxLine: 1 << 24, onMessage: () => undefined, onViolation: () => undefined });
    const sent: Array<[unknown, string]> = [];
    const send = (h: object, body?: string) => {
      sender.send(h, body);
      sent.push([h, body ?? '']);
    };
    for (let i = 0; i < 3000; i++) send({ t: 'result', id: i + 1 }, JSON.stringify({ n: i, text: 'é€😀'.repeat(i % 7) }));
    send({ t: 'deploy', did: 1 }, JSON.stringify('x'.repeat(200_000) + '€'));
    send({ t: 'ready' });
    await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 10; i++) send({ t: 'result', id: 5000 + i }, '{}');
    await vi.waitFor(() => expect(got.length).toBe(sent.length), { timeout: 5_000 });
    expect(got).toEqual(sent);
    a.destroy();
    b.destroy();
  });

  it('delivers raw parts as they are with their messages: any text, multi-byte, empty, and longer than a pipe write', async () => {
    const [a, b] = await socketpair();
    const got: Array<[unknown, string, string | undefined]> = [];
    new Wire(a, { maxLine: 1 << 24, onMessage: (h, body, raw) => got.push([h, body, raw]), onViolation: (why) => expect.fail(why) });
    const sender = new Wire(b, { maxLine: 1 << 24, onMessage: () => undefined, onViolation: () => undefined });
    const sent: Array<[unknown, string, string | undefined]> = [];
    const send = (h: object, body: string, raw?: string) => {
      sender.send(h, body, raw);
      sent.push([h, body, raw]);
    };
    const texts = ['{\n  "a": "tab\there",\n  "b": "\\"quoted\\""\n}\n', '', '#12\n{"t":"x"}\n', 'é€😀\r\n'.repeat(1000), 'x'.repeat(300_000) + '😀'];
    for (let i = 0; i < 500; i++) send({ t: 'call', id: i }, '{}', i % 3 === 0 ? texts[i % texts.length] : undefined);
    await new Promise((r) => setImmediate(r));
    for (const text of texts) send({ t: 'call', id: -1 }, '{"x":1}', text);
    await vi.waitFor(() => expect(got.length).toBe(sent.length), { timeout: 5_000 });
    expect(got).toEqual(sent);
    a.destroy();
    b.destroy();
  });

  it('yields the event loop within a read of many messages, so another wire is served between them, and keeps their order', async () => {
    const [a, b] = await socketpair();
    const [c, d] = await socketpair();
    const busy = (ms: number) => {
      for (const until = performance.now() + ms; performance.now() < until; );
    };
    const order: string[] = [];
    let othersSent = false;
    const other = new Wire(d, { maxLine: 1000, onMessage: () => undefined, onViolation: () => undefined });
    new Wire(c, { maxLine: 1000, onMessage: () => order.push('other'), onViolation: (why) => expect.fail(why) });
    new Wire(a, {
      maxLine: 1 << 20,
      onMessage: (h, _body, raw) => {
        order.push(`${(h as { id: number }).id}${raw === undefined ? '' : ':' + raw.length}`);
        // The other wire's message is sent while this read is being handled: it is on its socket
        // before the read ends, and one turn that handled the whole read would serve it last.
        if (!othersSent) {
          othersSent = true;
          other.send({ t: 'ready' });
          busy(20);
        }
        busy(TURN_BUDGET_MS / 4);
      },
      onViolation: (why) => expect.fail(why),
    });
    // 200 messages (every tenth with a raw part) in one write: one read on the other side.
    const sender = new Wire(b, { maxLine: 1 << 20, onMessage: () => undefined, onViolation: () => undefined });
    for (let i = 0; i < 200; i++) sender.send({ t: 'call', id: i }, '{}', i % 10 === 0 ? 'r'.repeat(i) : undefined);
    await vi.waitFor(() => expect(order).toHaveLength(201), { timeout: 10_000 });
    const at = order.indexOf('other');
    expect(at).toBeGreaterThan(0);
    // Served within a few budgets of its arrival, not after the 200 (50 budgets' worth).
    expect(at).toBeLessThan(40);
    expect(order.filter((o) => o !== 'other')).toEqual(Array.from({ length: 200 }, (_, i) => (i % 10 === 0 ? `${i}:${i}` : String(i))));
    for (const s of [a, b, c, d]) s.destroy();
  });

  it.each([
    ['#abc\n{"t":"ready"}\n', 'a malformed raw part'],
    ['#-1\n{"t":"ready"}\n', 'a malformed raw part'],
    ['#5000\n', 'a malformed raw part'],
    ['#2\nab#2\ncd{"t":"ready"}\n', 'a malformed raw part'],
    ['#900\n' + 'x'.repeat(900) + 'y'.repeat(1200), 'a message exceeds 1000 characters'],
  ])('reports a raw part that does not fit: %#', async (bytes, why) => {
    const [a, b] = await socketpair();
    const got: unknown[] = [];
    const violations: string[] = [];
    new Wire(a, { maxLine: 1000, onMessage: (h) => got.push(h), onViolation: (w) => violations.push(w) });
    b.write(bytes);
    // Waits for the violation itself (bounded), not a fixed time for the bytes to cross.
    await vi.waitFor(() => expect(violations).toHaveLength(1), { timeout: 5_000 });
    expect(got).toEqual([]);
    expect(violations).toEqual([why]);
    a.destroy();
    b.destroy();
  });
});
