import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../../kernel/store/sqlite.ts';
import type { Message } from '../../../../plugins/pubsub/engine/model.ts';
import { insertMessage, loadAll, messageFromRow, pubsubMigrations } from '../../../../plugins/pubsub/engine/persistence.ts';
import { toMessageA, toMetaB, toView } from '../../../../plugins/pubsub/shared/projection.ts';
import { formatDuration } from '../../../../plugins/pubsub/shared/duration.ts';

const NOW = Date.UTC(2026, 2, 1, 12, 0, 0);

const bare: Message = {
  msgId: 'svcpsm1',
  seq: 7,
  topic: '/orders/new',
  data: { order: 42 },
  dataJson: '{"order":42}',
  size: 12,
  mimeType: 'application/json',
  priority: 3,
  expiration: undefined,
  expiresAt: undefined,
  pubTime: NOW - 90_000,
  recvTime: NOW - 1500,
  correlId: undefined,
  inReplyTo: undefined,
  extClientId: undefined,
  hasGd: true,
  publisher: 'ep.a',
  persistent: true,
  refs: 0,
};
const full: Message = { ...bare, expiration: 60, expiresAt: NOW + 58_500, correlId: 'series-1', inReplyTo: 'svcpsm0', extClientId: 'erp-3' };

const FULL_A = {
  data: { order: 42 },
  delivery_count: 2,
  expiration: 60,
  ext_client_id: 'erp-3',
  has_gd: true,
  mime_type: 'application/json',
  msg_id: 'svcpsm1',
  priority: 3,
  pub_time_iso: '2026-03-01T11:58:30.000Z',
  size: 12,
  sub_key: 'sk1',
  topic_name: '/orders/new',
  expiration_time_iso: '2026-03-01T12:00:58.500Z',
  correl_id: 'series-1',
  in_reply_to: 'svcpsm0',
};
const FULL_B = {
  topic_name: '/orders/new',
  size: 12,
  priority: 3,
  expiration: 60,
  msg_id: 'svcpsm1',
  correl_id: 'series-1',
  pub_time_iso: '2026-03-01T11:58:30.000Z',
  recv_time_iso: '2026-03-01T11:59:58.500Z',
  time_since_pub: '0:01:30.000000',
  time_since_recv: '0:00:01.500000',
  sub_key: 'sk1',
  expiration_time_iso: '2026-03-01T12:00:58.500Z',
  ext_client_id: 'erp-3',
  in_reply_to: 'svcpsm0',
};

// Compared as JSON text: the order of the keys is part of what clients see.
const json = (value: unknown) => JSON.stringify(value);
/** Keeps the order of the other keys, which a spread over the result does too. */
const without = (o: Record<string, unknown>, ...keys: string[]) => Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));

describe('one message in every representation', () => {
  it('the view carries the message and the delivery', () => {
    expect(toView(full, 'sk1', 2)).toStrictEqual({
      msgId: 'svcpsm1',
      topic: '/orders/new',
      data: { order: 42 },
      size: 12,
      mimeType: 'application/json',
      priority: 3,
      expiration: 60,
      expiresAt: NOW + 58_500,
      pubTime: NOW - 90_000,
      recvTime: NOW - 1500,
      correlId: 'series-1',
      inReplyTo: 'svcpsm0',
      extClientId: 'erp-3',
      hasGd: true,
      subKey: 'sk1',
      deliveryCount: 2,
    });
  });

  it('variant A: every optional field set', () => {
    expect(json(toMessageA(toView(full, 'sk1', 2)))).toBe(json(FULL_A));
  });

  it('variant A: none set (expiration 0, ext_client_id empty, the others left out)', () => {
    const expected = { ...without(FULL_A, 'expiration_time_iso', 'correl_id', 'in_reply_to'), expiration: 0, ext_client_id: '' };
    expect(json(toMessageA(toView(bare, 'sk1', 2)))).toBe(json(expected));
  });

  it('variant B meta: every optional field set', () => {
    expect(json(toMetaB(toView(full, 'sk1', 2), NOW))).toBe(json(FULL_B));
  });

  it('variant B meta: none set (expiration 0, correl_id empty, the others left out)', () => {
    const expected = { ...without(FULL_B, 'expiration_time_iso', 'ext_client_id', 'in_reply_to'), expiration: 0, correl_id: '' };
    expect(json(toMetaB(toView(bare, 'sk1', 2), NOW))).toBe(json(expected));
  });

  it('times and ages follow each message when consecutive messages repeat or alternate them (formatters remember their last value)', () => {
    const times = [NOW - 5, NOW - 5, NOW - 3_600_000, NOW - 5, NOW + 2];
    for (const [i, t] of times.entries()) {
      const m = toView({ ...full, pubTime: t, recvTime: t + i, expiresAt: t + 1000 }, 'sk1', 1);
      const meta = toMetaB(m, NOW + i);
      expect(meta.pub_time_iso).toBe(new Date(t).toISOString());
      expect(meta.recv_time_iso).toBe(new Date(t + i).toISOString());
      expect(meta.expiration_time_iso).toBe(new Date(t + 1000).toISOString());
      expect(meta.time_since_pub).toBe(formatDuration(NOW + i - t));
      expect(meta.time_since_recv).toBe(formatDuration(NOW - t));
      expect(toMessageA(m).pub_time_iso).toBe(new Date(t).toISOString());
    }
  });
});

describe('the stored row', () => {
  let store: SqliteStore;
  beforeEach(async () => {
    store = new SqliteStore(':memory:');
    await store.migrate('pubsub', pubsubMigrations('sqlite'));
  });
  afterEach(async () => {
    await store.close();
  });

  it('holds every field; undefined ones as NULL', async () => {
    await insertMessage(store, full, [], true);
    await insertMessage(store, { ...bare, msgId: 'svcpsm2', seq: 8 }, [], false);
    const rows = await store.all('SELECT * FROM pubsub_message ORDER BY msg_id');
    const common = { topic: '/orders/new', data: '{"order":42}', size: 12, mime_type: 'application/json', priority: 3, pub_time: NOW - 90_000, recv_time: NOW - 1500, publisher: 'ep.a' };
    expect(rows).toEqual([
      { ...common, seq: 7, msg_id: 'svcpsm1', expiration: 60, expires_at: NOW + 58_500, correl_id: 'series-1', in_reply_to: 'svcpsm0', ext_client_id: 'erp-3', retained: 1 },
      { ...common, seq: 8, msg_id: 'svcpsm2', expiration: null, expires_at: null, correl_id: null, in_reply_to: null, ext_client_id: null, retained: 0 },
    ]);
  });

  it('store, load, view: the view of the original', async () => {
    for (const m of [full, bare]) {
      await insertMessage(store, m, [], false);
      const [row] = (await loadAll(store)).messages;
      const loaded = messageFromRow(row!);
      expect(loaded).toStrictEqual(m);
      expect(toView(loaded, 'sk1', 1)).toStrictEqual(toView(m, 'sk1', 1));
      await store.run('DELETE FROM pubsub_message');
    }
  });
});
