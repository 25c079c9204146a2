import { describe, expect, it } from 'vitest';
import { configIssues } from '../../../helpers/config.ts';
import { readSource, validate } from '../../../../kernel/config/store.ts';
import { encodeMessage, MAX_MESSAGE_BYTES, publishArgs } from '../../../../plugins/connectors/amqp/publish.ts';
import { safeReason } from '../../../../plugins/connectors/amqp/link.ts';

const plugins = [
  (await import('../../../../plugins/connectors/amqp/plugin.ts')).default,
  (await import('../../../../plugins/formats/json/plugin.ts')).default,
  (await import('../../../../plugins/formats/xml/plugin.ts')).default,
  (await import('../../../../plugins/secrets/named/plugin.ts')).default,
];

const issuesOf = (yaml: string) => configIssues(yaml, plugins);

const CONN = 'amqp_connection:\n  - { name: main, url: "amqp://u:p@rabbit:5672/prod" }\n';

describe('amqp_connection and channel_amqp schemas', () => {
  it('fill defaults', () => {
    const cfg = validate(readSource(`${CONN}channel_amqp:\n  - { name: in, connection: main, queue: orders, service: s }\n`, {}), plugins, {});
    expect(cfg.amqp_connection[0]).toMatchObject({ name: 'main', vhost: '/', heartbeat_s: 30, connect_timeout_ms: 10_000, reconnect: { min_ms: 500, max_ms: 30_000 }, publish_timeout_ms: 10_000, ready_check: false });
    expect(cfg.channel_amqp[0]).toMatchObject({ data_format: 'json', prefetch: 10, dead_letter: 'svc', ready_check: false, delivery: { use_queue: false, max_attempts: 5 } });
    expect(cfg.channel_amqp[0]!.declare).toBeUndefined();
  });

  it('refuse bad addresses, a missing address, url with host, bad reconnect bounds', () => {
    expect(issuesOf('amqp_connection:\n  - { name: a, url: "http://x" }\n')[0]).toMatch(/^amqp_connection\[0\]\.url: must be an amqp/);
    expect(issuesOf('amqp_connection:\n  - { name: a }\n')[0]).toMatch(/give url or host/);
    expect(issuesOf('amqp_connection:\n  - { name: a, url: "amqp://x", host: y }\n')[0]).toMatch(/not both/);
    expect(issuesOf('amqp_connection:\n  - { name: a, host: y, reconnect: { min_ms: 500, max_ms: 100 } }\n')[0]).toMatch(/max_ms: must be at least min_ms/);
    expect(issuesOf('amqp_connection:\n  - { name: a, host: y, password: x, password_secret: s }\n')[0]).toMatch(/not both/);
    expect(issuesOf('amqp_connection:\n  - { name: a, host: y }\n  - { name: a, host: z }\n')[0]).toMatch(/duplicate name 'a'/);
  });

  it('check channels: connection, format, concurrency, broker dead letters', () => {
    const ch = (extra: string, connection = 'main') => issuesOf(`${CONN}channel_amqp:\n  - { name: in, connection: ${connection}, queue: q, service: s${extra} }\n`);
    expect(ch('', 'nope')[0]).toMatch(/connection: no amqp_connection named 'nope'/);
    expect(ch(', data_format: hl7')[0]).toMatch(/data_format: no enabled plugin decodes messages of data_format 'hl7'/);
    expect(ch(', xml: {}')[0]).toMatch(/xml settings apply only to data_format: xml/);
    expect(ch(', prefetch: 5, concurrency: 6')[0]).toMatch(/concurrency: must be at most prefetch \(5\)/);
    expect(ch(', dead_letter: broker, declare: { durable: true }')[0]).toMatch(/x-dead-letter-exchange/);
    expect(ch(', dead_letter: broker, declare: { arguments: { x-dead-letter-exchange: dlx } }')).toEqual([]);
    expect(ch(', dead_letter: broker')).toEqual([]);
    expect(issuesOf(`${CONN}plugins: { use-queue: false }\nchannel_amqp:\n  - { name: in, connection: main, queue: q, service: s }\n`).join()).toMatch(/use-queue plugin is off/);
  });

  it('keep the url write-only', () => {
    const schema = plugins[0]!.contributes!.sections!.amqp_connection!;
    expect(JSON.stringify(schema.toJSONSchema?.() ?? {})).toContain('writeOnly');
  });
});

describe('amqp.publish arguments', () => {
  const base = { connection: 'main', exchange: '', routingKey: 'q' };
  it('default to persistent, and send objects as JSON, strings as text', () => {
    const json = encodeMessage(publishArgs.parse({ ...base, message: { a: 1 } }));
    expect(json.body.toString()).toBe('{"a":1}');
    expect(json.options).toMatchObject({ persistent: true, contentType: 'application/json' });
    expect(encodeMessage(publishArgs.parse({ ...base, message: 'hi', options: { persistent: false, priority: 3 } })).options).toMatchObject({ persistent: false, contentType: 'text/plain', priority: 3 });
  });

  it('refuse long names, odd headers, unknown options and oversized messages', () => {
    expect(publishArgs.safeParse({ ...base, exchange: 'x'.repeat(256), message: 1 }).success).toBe(false);
    expect(publishArgs.safeParse({ ...base, message: 1, options: { headers: { a: { nested: 1 } } } }).success).toBe(false);
    expect(publishArgs.safeParse({ ...base, message: 1, options: { nope: 1 } }).success).toBe(false);
    expect(publishArgs.safeParse({ ...base }).success).toBe(false);
    expect(() => encodeMessage(publishArgs.parse({ ...base, message: 'x'.repeat(MAX_MESSAGE_BYTES + 1) }))).toThrow(/larger than/);
  });
});

describe('safeReason', () => {
  it('says why without addresses or credentials', () => {
    expect(safeReason(Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:5672'), { code: 'ECONNREFUSED' }))).toBe('connection refused');
    expect(safeReason(new Error('Handshake terminated by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN"'))).toMatch(/^access refused/);
    expect(safeReason(new Error('amqp://u:secret@host failed'))).toBe('cannot connect');
  });
});
