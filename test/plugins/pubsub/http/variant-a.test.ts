import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ALICE, BOB, CAROL, WRONG, json, startPubSub, type PubSubKernel } from './helpers.ts';

let k: PubSubKernel;
beforeAll(async () => {
  k = await startPubSub();
});
afterAll(async () => {
  await k?.close();
});

const TOPIC_URL = '/svc/pubsub/topic/orders/new';
const SUB_URL = '/svc/pubsub/subscribe/topic/orders/new';

async function drain(auth = ALICE, url = TOPIC_URL): Promise<Array<Record<string, unknown>>> {
  const res = await k.call('PATCH', url, auth);
  expect(res.statusCode).toBe(200);
  return json(res) as Array<Record<string, unknown>>;
}

function expectError(res: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number, details: string): void {
  expect(res.statusCode).toBe(status);
  const body = JSON.parse(res.body);
  expect(body).toEqual({ result: 'Error', cid: res.headers['x-svc-cid'], details });
}

beforeEach(async () => {
  await k.call('POST', SUB_URL, ALICE);
  await drain();
});

describe('variant A publish', () => {
  it('returns {msg_id} only', async () => {
    const res = await k.call('POST', TOPIC_URL, ALICE, { data: 'hello' });
    expect(res.statusCode).toBe(200);
    const body = json(res) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['msg_id']);
    expect(body.msg_id).toMatch(/^svcpsm[0-9a-f]{24,}$/);
    expect(res.headers['x-svc-cid']).toBeTruthy();
    const [msg] = await drain();
    expect(msg!.msg_id).toBe(body.msg_id);
  });

  it('data may be a string or a JSON object', async () => {
    await k.call('POST', TOPIC_URL, ALICE, { data: 'text' });
    await k.call('POST', TOPIC_URL, ALICE, { data: { order: 7, lines: [1, 2] } });
    expect((await drain()).map((m) => m.data)).toEqual([{ order: 7, lines: [1, 2] }, 'text']);
  });

  it('without data: 400 Invalid input', async () => {
    expectError(await k.call('POST', TOPIC_URL, ALICE, { priority: 3 }), 400, 'Invalid input');
    expectError(await k.call('POST', TOPIC_URL, ALICE, undefined), 400, 'Invalid input');
    expectError(await k.call('POST', TOPIC_URL, ALICE, { data: null }), 400, 'Invalid input');
    expectError(await k.call('POST', TOPIC_URL, ALICE, { data: '' }), 400, 'Invalid input');
    expectError(await k.call('POST', TOPIC_URL, ALICE, 'not json'), 400, 'Invalid input');
    expect(await drain()).toEqual([]);
  });

  it('priority: 1 to 9, default 5; out of range is 400', async () => {
    for (const priority of [1, 9]) expect((await k.call('POST', TOPIC_URL, ALICE, { data: 'p', priority })).statusCode).toBe(200);
    await k.call('POST', TOPIC_URL, ALICE, { data: 'default' });
    expect((await drain()).map((m) => m.priority)).toEqual([5, 9, 1]);
    for (const priority of [0, 10, 2.5, '5']) expectError(await k.call('POST', TOPIC_URL, ALICE, { data: 'p', priority }), 400, 'Invalid input');
  });

  it('expiration: seconds, no default (never expires)', async () => {
    await k.call('POST', TOPIC_URL, ALICE, { data: 'e', expiration: 3600 });
    await k.call('POST', TOPIC_URL, ALICE, { data: 'n' });
    const [never, expiring] = await drain();
    expect(never).toMatchObject({ data: 'n', expiration: 0 });
    expect(never).not.toHaveProperty('expiration_time_iso');
    expect(expiring!.expiration).toBe(3600);
    expect(Date.parse(expiring!.expiration_time_iso as string) - Date.parse(expiring!.pub_time_iso as string)).toBe(3_600_000);
    for (const expiration of [0, -1, 'soon']) expectError(await k.call('POST', TOPIC_URL, ALICE, { data: 'x', expiration }), 400, 'Invalid input');
  });

  it('correl_id, in_reply_to and ext_client_id travel with the message', async () => {
    await k.call('POST', TOPIC_URL, ALICE, { data: 'x', correl_id: 'series-1', in_reply_to: 'svcpsm0', ext_client_id: 'erp-3' });
    const [m] = await drain();
    expect(m).toMatchObject({ correl_id: 'series-1', in_reply_to: 'svcpsm0', ext_client_id: 'erp-3' });
  });

  it('non-GD publishes arriving together are all answered, each with its own message queued', async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => k.call('POST', TOPIC_URL, ALICE, { data: `m${i}` })));
    expect(answers.map((r) => r.statusCode)).toEqual(answers.map(() => 200));
    const ids = answers.map((r) => (json(r) as { msg_id: string }).msg_id);
    expect(new Set(ids).size).toBe(30);
    const queued = await drain();
    expect(new Set(queued.map((m) => m.msg_id))).toEqual(new Set(ids));
  });

  it('has_gd defaults to false', async () => {
    await k.call('POST', TOPIC_URL, ALICE, { data: 'x' });
    await k.call('POST', TOPIC_URL, ALICE, { data: 'y', has_gd: true });
    expect((await drain()).map((m) => [m.data, m.has_gd])).toEqual([
      ['y', true],
      ['x', false],
    ]);
    expectError(await k.call('POST', TOPIC_URL, ALICE, { data: 'x', has_gd: 'yes' }), 400, 'Invalid input');
  });

  it('MIME type comes from Content-Type; a form-urlencoded body is read as JSON and recorded as text/json', async () => {
    await k.call('POST', TOPIC_URL, ALICE, '{"data": "curl -d"}', { 'content-type': 'application/x-www-form-urlencoded' });
    await k.call('POST', TOPIC_URL, ALICE, { data: 'j' }, { 'content-type': 'application/json; charset=utf-8' });
    await k.call('POST', TOPIC_URL, ALICE, { data: 'p' }, { 'content-type': 'text/plain' });
    expect((await drain()).map((m) => [m.data, m.mime_type])).toEqual([
      ['p', 'text/plain'],
      ['j', 'application/json'],
      ['curl -d', 'text/json'],
    ]);
  });

  it('needs publication permission: 403 without it', async () => {
    const res = await k.call('POST', '/svc/pubsub/topic/orders/paid', BOB, { data: 'x' });
    expectError(res, 403, 'Forbidden');
    expect(k.logged('publish refused').some((l) => String(l.reason).includes("no publication permission for '/orders/paid'"))).toBe(true);
  });

  it('unknown topic: 404', async () => {
    expectError(await k.call('POST', '/svc/pubsub/topic/orders/unknown', ALICE, { data: 'x' }), 404, 'Topic not found');
  });

  it('a full queue refuses the publish with 503', async () => {
    await k.call('POST', '/svc/pubsub/subscribe/topic/small', ALICE);
    for (let i = 0; i < 2; i++) expect((await k.call('POST', '/svc/pubsub/topic/small', ALICE, { data: i })).statusCode).toBe(200);
    expectError(await k.call('POST', '/svc/pubsub/topic/small', ALICE, { data: 3 }), 503, 'Queue is full');
    expect(await drain(ALICE, '/svc/pubsub/topic/small')).toHaveLength(2);
  });

  it('a body nested deeper than 100 levels: 400 Invalid input, with the reason in the log', async () => {
    const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    expect((await k.call('POST', TOPIC_URL, ALICE, `{"data": ${nested(99)}}`)).statusCode).toBe(200);
    expectError(await k.call('POST', TOPIC_URL, ALICE, `{"data": ${nested(100)}}`), 400, 'Invalid input');
    expectError(await k.call('POST', TOPIC_URL, ALICE, `{"data": ${nested(5000)}}`), 400, 'Invalid input');
    expect(k.logged('publish refused').some((l) => String(l.reason).includes('nested deeper than 100 levels'))).toBe(true);
    expect(await drain()).toHaveLength(1);
  });

  it('poisoning keys are refused as on a json channel, however they are spelled', async () => {
    for (const body of [
      String.raw`{"data": {"a": 1, "\u005f_proto__": {"admin": true}}}`,
      // biome-ignore lint/complexity/noUselessStringRaw: raw like the others of the list
      String.raw`{"data": {"__proto__": {"admin": true}}}`,
      String.raw`{"data": {"b": {"constructor": {"\u0070rototype": {}}, "c": 2}}}`,
      String.raw`{"data": {"d": [{"\u0063onstructor": {"prototype": 1}, "e": 3}]}}`,
    ]) {
      expectError(await k.call('POST', TOPIC_URL, ALICE, body), 400, 'Invalid input');
    }
    expect(await drain()).toEqual([]);
  });

  it('a body over server.body_limit: 413', async () => {
    const res = await k.call('POST', TOPIC_URL, ALICE, { data: 'x'.repeat(1024 * 1024 + 10) });
    expectError(res, 413, 'Request body exceeds 1048576 bytes');
  });
});

describe('variant A get messages', () => {
  it('returns every field of the spec table, most recently published first', async () => {
    const sub = json(await k.call('POST', SUB_URL, ALICE)) as { sub_key: string };
    await k.call('POST', TOPIC_URL, ALICE, { data: 'first', priority: 9 });
    await k.call('POST', TOPIC_URL, ALICE, { data: 'second', priority: 2, expiration: 60, ext_client_id: 'c', has_gd: true });
    const list = await drain();
    expect(list.map((m) => m.data)).toEqual(['second', 'first']);
    const m = list[0]!;
    expect(m).toMatchObject({
      data: 'second',
      delivery_count: 0,
      expiration: 60,
      ext_client_id: 'c',
      has_gd: true,
      mime_type: 'application/json',
      priority: 2,
      size: 6,
      sub_key: sub.sub_key,
      topic_name: '/orders/new',
    });
    for (const field of ['expiration_time_iso', 'pub_time_iso']) expect(new Date(m[field] as string).toISOString()).toBe(m[field]);
    expect(list[1]!.ext_client_id).toBe('');
  });

  it('an empty list when nothing is queued; gotten messages are gone', async () => {
    expect(await drain()).toEqual([]);
    await k.call('POST', TOPIC_URL, ALICE, { data: 'once' });
    expect(await drain()).toHaveLength(1);
    expect(await drain()).toEqual([]);
  });

  it('an empty list and a log entry when there is no subscription', async () => {
    const before = k.logged('without a subscription').length;
    expect(await drain(BOB)).toEqual([]);
    const entries = k.logged('without a subscription');
    expect(entries.length).toBe(before + 1);
    expect(entries.at(-1)).toMatchObject({ level: 30, endpoint: 'ep.bob', topic: '/orders/new' });
  });

  it('each subscriber has its own queue', async () => {
    await k.call('POST', SUB_URL, BOB);
    await k.call('POST', TOPIC_URL, ALICE, { data: 'both' });
    expect((await drain(BOB)).map((m) => m.data)).toEqual(['both']);
    expect((await drain(ALICE)).map((m) => m.data)).toEqual(['both']);
    await k.call('DELETE', SUB_URL, BOB);
  });
});

describe('variant A subscribe and unsubscribe', () => {
  it('subscribe answers {sub_key, queue_depth}; again: {sub_key} only and an informational log entry', async () => {
    await k.call('DELETE', '/svc/pubsub/subscribe/topic/orders/paid', ALICE);
    const first = await k.call('POST', '/svc/pubsub/subscribe/topic/orders/paid', ALICE);
    expect(first.statusCode).toBe(200);
    const body = json(first) as { sub_key: string; queue_depth: number };
    expect(Object.keys(body).sort()).toEqual(['queue_depth', 'sub_key']);
    expect(body.queue_depth).toBe(0);
    expect(body.sub_key).toMatch(/^svcpsk\./);
    const again = await k.call('POST', '/svc/pubsub/subscribe/topic/orders/paid', ALICE);
    expect(json(again)).toEqual({ sub_key: body.sub_key });
    expect(k.logged('already subscribed').at(-1)).toMatchObject({ level: 30, endpoint: 'ep.alice', topic: '/orders/paid' });
  });

  it('queue_depth is the number of messages already queued', async () => {
    await k.call('DELETE', SUB_URL, ALICE);
    await k.call('POST', TOPIC_URL, ALICE, { data: 'retained' });
    const sub = json(await k.call('POST', SUB_URL, ALICE)) as { queue_depth: number };
    expect(sub.queue_depth).toBe(0); // retained messages move in the background, after the answer
    await k.engine.idle();
    expect((await drain()).map((m) => m.data)).toEqual(['retained']);
  });

  it('needs subscription permission (403); unknown topics are 404', async () => {
    expectError(await k.call('POST', '/svc/pubsub/subscribe/topic/orders/eu/new', BOB), 403, 'Forbidden');
    expectError(await k.call('POST', '/svc/pubsub/subscribe/topic/orders/none', ALICE), 404, 'Topic not found');
  });

  it('unsubscribe is accepted with or without a subscription; the key is invalidated', async () => {
    const before = json(await k.call('POST', SUB_URL, ALICE)) as { sub_key: string };
    const res = await k.call('DELETE', SUB_URL, ALICE);
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({});
    expect(k.logged('unsubscribed, subscription key deleted').at(-1)).toMatchObject({ endpoint: 'ep.alice', topic: '/orders/new' });
    const again = await k.call('DELETE', SUB_URL, ALICE);
    expect(again.statusCode).toBe(200);
    expect(k.logged('unsubscribe without a subscription').at(-1)).toMatchObject({ level: 30, endpoint: 'ep.alice' });
    expect(await drain()).toEqual([]);
    const after = json(await k.call('POST', SUB_URL, ALICE)) as { sub_key: string; queue_depth: number };
    expect(after.sub_key).not.toBe(before.sub_key);
    expect(after.queue_depth).toBe(0);
  });
});

describe('variant A topic names in URLs', () => {
  it('names with slashes work as the last path part, percent-encoded too', async () => {
    await k.call('POST', '/svc/pubsub/subscribe/topic/%2Forders%2Feu%2Fnew', ALICE);
    await k.call('POST', '/svc/pubsub/topic/orders/eu/new', ALICE, { data: 'plain' });
    await k.call('POST', '/svc/pubsub/topic/%2Forders%2Feu%2Fnew', ALICE, { data: 'encoded' });
    await k.call('POST', '/svc/pubsub/topic/orders%2Feu%2Fnew', ALICE, { data: 'half' });
    const list = await drain(ALICE, '/svc/pubsub/topic/orders/eu/new');
    expect(list.map((m) => [m.data, m.topic_name])).toEqual([
      ['half', '/orders/eu/new'],
      ['encoded', '/orders/eu/new'],
      ['plain', '/orders/eu/new'],
    ]);
  });

  it('a path that cannot be a topic name is 404', async () => {
    expectError(await k.call('POST', '/svc/pubsub/topic/orders/*', ALICE, { data: 'x' }), 404, 'Topic not found');
  });
});

describe('variant A authentication', () => {
  it('HTTP Basic Auth only: missing or wrong credentials are 401 with a challenge', async () => {
    for (const auth of [undefined, WRONG, 'Bearer abc']) {
      const res = await k.call('POST', TOPIC_URL, auth, { data: 'x' });
      expectError(res, 401, 'Unauthorized');
      expect(res.headers['www-authenticate']).toMatch(/^Basic realm=/);
    }
    expectError(await k.call('PATCH', TOPIC_URL, WRONG), 401, 'Unauthorized');
    expectError(await k.call('POST', SUB_URL, WRONG), 401, 'Unauthorized');
    expectError(await k.call('DELETE', SUB_URL, WRONG), 401, 'Unauthorized');
  });

  it('valid credentials of a definition that backs no pub/sub endpoint are 401 too', async () => {
    const res = await k.call('POST', TOPIC_URL, CAROL, { data: 'x' });
    expectError(res, 401, 'Unauthorized');
    expect(k.logged('publish refused').at(-1)!.reason).toContain("'sec.carol' identifies no pub/sub endpoint");
  });

  it('wrong methods are 405', async () => {
    const res = await k.call('GET', TOPIC_URL, ALICE);
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST, PATCH');
  });
});
