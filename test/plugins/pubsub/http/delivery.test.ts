import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, BOB, PUBSUB_CONFIG, WRONG, basic, json, startPubSub, type PubSubKernel } from './helpers.ts';

/** Real sockets: messages of a get are removed only once the response was written. */

let k: PubSubKernel;
// dave and erin hang up; their credentials are used by nothing else, so the server is still
// verifying them (a deliberately slow KDF, never cached before a success) when the connection resets.
const CONFIG = `${PUBSUB_CONFIG}
  - { name: ep.dave, security: sec.dave, sub: ['/orders/**'] }
  - { name: ep.erin, security: sec.erin, sub: ['/orders/**'] }
pubsub_subscription:
  - { endpoint: ep.bob, topics: [/orders/new] }
  - { endpoint: ep.dave, topics: [/orders/paid] }
  - { endpoint: ep.erin, topics: [/orders/eu/new] }
`.replace('security:\n', 'security:\n  - { name: sec.dave, type: basic_auth, username: dave, password: dave-password-1 }\n  - { name: sec.erin, type: basic_auth, username: erin, password: erin-password-1 }\n');
const DAVE = basic('dave', 'dave-password-1');
const ERIN = basic('erin', 'erin-password-1');

beforeAll(async () => {
  k = await startPubSub({ config: CONFIG, listen: true });
});
afterAll(async () => {
  await k?.close();
});

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function rawRequest(method: string, path: string, auth: string, body = ''): string {
  return `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/**
 * Sends requests on one raw socket and resets the connection before the last answer can be
 * written: the first request must be slow (credentials never verified before cost a full KDF),
 * so every answer after it waits in the server's queue for pipelined responses.
 */
function sendThenHangUp(requests: string[]): Promise<void> {
  const { port } = new URL(k.url!);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      socket.write(requests.join(''));
      // Long enough for the server to read the requests, far shorter than one KDF.
      setTimeout(() => {
        socket.resetAndDestroy();
        resolve();
      }, 25);
    });
  });
}

describe('delivery over real connections', () => {
  it('variant A: a get whose response cannot be written puts the messages back with delivery_count + 1', async () => {
    for (const tag of ['m1', 'm2', 'm3']) await k.call('POST', '/svc/pubsub/topic/orders/paid', ALICE, { data: tag, has_gd: true });
    const key = k.engine.subscriptionKey('ep.dave', '/orders/paid')!;
    await k.engine.idle();
    expect(k.engine.queueDepth(key)).toBe(3);
    const notWritten = k.logged('response not written').length;

    await sendThenHangUp([rawRequest('PATCH', '/svc/pubsub/topic/orders/paid', DAVE)]);
    await until(() => k.logged('response not written').length > notWritten, 'the failed get');
    expect(k.engine.queueDepth(key)).toBe(3);
    await k.engine.idle();
    const rows = await k.kernel.store.all<{ delivery_count: number }>('SELECT delivery_count FROM pubsub_queue WHERE sub_key = ?', [key]);
    expect(rows.map((r) => r.delivery_count)).toEqual([1, 1, 1]);

    const res = await fetch(`${k.url}/svc/pubsub/topic/orders/paid`, { method: 'PATCH', headers: { authorization: DAVE } });
    const list = (await res.json()) as Array<{ data: string; delivery_count: number }>;
    expect(list.map((m) => [m.data, m.delivery_count])).toEqual([
      ['m3', 1],
      ['m2', 1],
      ['m1', 1],
    ]);
    await until(() => k.engine.queueDepth(key) === 0, 'an empty queue');
    await k.engine.idle();
    expect(await k.kernel.store.one('SELECT COUNT(*) AS n FROM pubsub_queue WHERE sub_key = ?', [key])).toEqual({ n: 0 });
  });

  it('variant B: the same for POST /pubsub/messages/get', async () => {
    for (const tag of ['b1', 'b2']) await k.call('POST', '/pubsub/topic/orders/eu/new', ALICE, { data: tag });
    const keys = k.engine.subscriptionKeys('ep.erin');
    const depth = () => keys.reduce((n, key) => n + k.engine.queueDepth(key), 0);
    expect(depth()).toBe(2);
    expect((await k.call('POST', '/pubsub/messages/get', ERIN, { max_messages: 1, max_len: 1 })).statusCode).toBe(200); // erin's credentials are verified once
    const notWritten = k.logged('response not written').length;
    // B reads its body after authenticating: a hang-up during the KDF would end the get before it takes anything.
    await sendThenHangUp([rawRequest('POST', '/pubsub/messages/get', WRONG, '{}'), rawRequest('POST', '/pubsub/messages/get', ERIN, '{}')]);
    await until(() => k.logged('response not written').length > notWritten, 'the failed get');
    expect(depth()).toBe(2);
    const body = json(await k.call('POST', '/pubsub/messages/get', ERIN)) as { messages: Array<{ data: string }> };
    expect(body.messages.map((m) => m.data)).toEqual(['b1', 'b2']);
    expect(depth()).toBe(0);
  });

  it('a get whose response was written removes its messages from the store', async () => {
    const { msg_id } = json(await k.call('POST', '/pubsub/topic/orders/new', ALICE, { data: 'gone after get' })) as { msg_id: string };
    await fetch(`${k.url}/pubsub/messages/get`, { method: 'POST', headers: { authorization: BOB } }).then((r) => r.json());
    await k.engine.idle();
    expect(await k.kernel.store.one('SELECT msg_id FROM pubsub_message WHERE msg_id = ?', [msg_id])).toBeUndefined();
  });

  it('parallel publishers and getters over HTTP: every acknowledged message arrives exactly once', async () => {
    const publishers = 10;
    const perPublisher = 40;
    const acknowledged = new Set<string>();
    const received: string[] = [];
    let publishing = true;

    const publisher = async (p: number) => {
      for (let i = 0; i < perPublisher; i++) {
        const res = await fetch(`${k.url}/pubsub/topic/orders/new`, {
          method: 'POST',
          headers: { authorization: ALICE, 'content-type': 'application/json' },
          body: JSON.stringify({ data: `${p}-${i}`, priority: i % 10 }),
        });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        acknowledged.add(`${p}-${i}`);
      }
    };
    const getter = async () => {
      for (;;) {
        const res = await fetch(`${k.url}/pubsub/messages/get`, {
          method: 'POST',
          headers: { authorization: BOB, 'content-type': 'application/json' },
          body: JSON.stringify({ max_messages: 7 }),
        });
        const body = (await res.json()) as { messages: Array<{ data: string }> };
        for (const m of body.messages) received.push(m.data);
        if (!publishing && body.messages.length === 0) return;
      }
    };
    const getters = Array.from({ length: 5 }, getter);
    await Promise.all(Array.from({ length: publishers }, (_, p) => publisher(p)));
    publishing = false;
    await Promise.all(getters);

    expect(acknowledged.size).toBe(publishers * perPublisher);
    expect(received).toHaveLength(acknowledged.size);
    expect(new Set(received)).toEqual(acknowledged);
  });
});
