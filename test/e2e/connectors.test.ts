import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import mysql from 'mysql2/promise';
import { makeProject, runCliAsync, startCli, type CliServer } from '../helpers/cli.ts';

/**
 * The connectors as a user meets them, over the CLI and real sockets: an order taken over HTTP is
 * published to RabbitMQ, consumed by an AMQP channel whose service writes it to PostgreSQL and
 * announces it over MQTT, where an MQTT channel's service writes an audit row to MariaDB; a body that is not JSON ends in the dead-letter queue with its reason; the
 * server restarted consumes again. Real PostgreSQL, MariaDB, RabbitMQ and Mosquitto.
 */
const id = randomBytes(4).toString('hex');
const ORDERS = `e2e_orders_${id}`;
const AUDIT = `e2e_audit_${id}`;
const QUEUE = `e2e.orders.${id}`;

const CONFIG = `
server:
  port: 0
sql_connection:
  - { name: orders_db, engine: postgresql, url: 'postgres://postgres@127.0.0.1:5432/test', pool_size: 4, ready_check: true }
  - { name: audit_db, engine: mysql, url: 'mysql://root@127.0.0.1:3306/test', pool_size: 2, allowed_services: [audit] }
amqp_connection:
  - { name: broker, url: 'amqp://guest:guest@127.0.0.1:5672', publish_timeout_ms: 20000 }
mqtt_connection:
  - { name: plant, url: 'mqtt://127.0.0.1:1883', allowed_services: [store-order] }
channel_mqtt:
  - { name: notices, url: 'mqtt://127.0.0.1:1883', topics: ['e2e/${id}/orders/+/stored'], clean_session: true, service: audit }
channel_amqp:
  - name: orders-in
    connection: broker
    queue: ${QUEUE}
    # Gone a minute after the last consumer left: the test leaves nothing behind on the broker.
    declare: { durable: true, arguments: { x-expires: 60000 } }
    service: store-order
    prefetch: 10
    delivery: { max_attempts: 3, base_delay_ms: 100 }
channel_rest:
  - { name: take, url_path: /orders, service: take-order, method: POST, security: none }
  - { name: raw, url_path: /raw, service: send-raw, method: POST, security: none }
  - { name: read, url_path: '/orders/{id}', service: read-order, method: GET, security: none }
`;

const SERVICES = {
  'take-order.ts': `import { service, t, amqp } from 'svc/sdk';
export default service({
  input: { id: t.integer(), item: t.string() },
  async handle(ctx) {
    await amqp('broker').publish('', '${QUEUE}', { id: ctx.input.id, item: ctx.input.item }, { messageId: 'order-' + ctx.input.id });
    return { queued: ctx.input.id };
  },
});
`,
  'send-raw.ts': `import { service, amqp } from 'svc/sdk';
export default service({ async handle() { await amqp('broker').publish('', '${QUEUE}', 'this is not JSON', { contentType: 'text/plain' }); return {}; } });
`,
  'store-order.ts': `import { service, t, sql, mqtt } from 'svc/sdk';
export default service({
  input: { id: t.integer(), item: t.string() },
  async handle(ctx) {
    await sql('orders_db').query('INSERT INTO ${ORDERS} (id, item, message_id) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [ctx.input.id, ctx.input.item, ctx.headers['message-id'] ?? null]);
    await mqtt('plant').publish('e2e/${id}/orders/' + ctx.input.id + '/stored', { id: ctx.input.id, from: ctx.delivery.source.kind + ':' + ctx.delivery.source.name }, { qos: 1 });
    return {};
  },
});
`,
  'audit.ts': `import { service, t, sql } from 'svc/sdk';
export default service({
  input: { id: t.integer(), from: t.string() },
  async handle(ctx) {
    await sql('audit_db').query('INSERT INTO ${AUDIT} (order_id, source) VALUES (?, ?)', [ctx.input.id, ctx.input.from + ' > ' + ctx.delivery.source.kind + ':' + ctx.headers['mqtt-topic']]);
    return {};
  },
});
`,
  'read-order.ts': `import { service, t, sql, NotFound } from 'svc/sdk';
export default service({
  input: { id: t.integer() },
  async GET(ctx) {
    const { rows } = await sql('orders_db').query('SELECT id, item, message_id, created_at FROM ${ORDERS} WHERE id = $1', [ctx.input.id]);
    if (rows.length === 0) throw new NotFound('no order ' + ctx.input.id);
    return rows[0];
  },
});
`,
};

const pgClient = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
let maria: mysql.Connection;
beforeAll(async () => {
  await pgClient.connect();
  await pgClient.query(`CREATE TABLE ${ORDERS} (id bigint PRIMARY KEY, item text NOT NULL, message_id text, created_at timestamptz NOT NULL DEFAULT now())`);
  maria = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root', database: 'test' });
  await maria.query(`CREATE TABLE ${AUDIT} (n INT AUTO_INCREMENT PRIMARY KEY, order_id BIGINT NOT NULL, source VARCHAR(100) NOT NULL)`);
});
afterAll(async () => {
  await pgClient.query(`DROP TABLE IF EXISTS ${ORDERS}`).catch(() => {});
  await pgClient.end().catch(() => {});
  await maria?.query(`DROP TABLE IF EXISTS ${AUDIT}`).catch(() => {});
  await maria?.end().catch(() => {});
});

let server: CliServer | undefined;
afterEach(async () => {
  if (server?.proc.exitCode === null) await server.stop();
  server = undefined;
});

const post = (path: string, body: unknown) => fetch(server!.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const auditRows = async () => ((await maria.query(`SELECT order_id, source FROM ${AUDIT} ORDER BY n`)) as unknown as [Array<{ order_id: number; source: string }>])[0];

async function svc(dir: string, ...args: string[]): Promise<string> {
  const r = await runCliAsync([...args, '--config', 'config/svc.yaml'], dir);
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

describe('connectors over the CLI (PostgreSQL, MariaDB, RabbitMQ, Mosquitto)', () => {
  it('HTTP → AMQP → PostgreSQL, then MQTT → MariaDB; a bad message dead-lettered; the same after a restart', async () => {
    const dir = makeProject(CONFIG, SERVICES);
    server = await startCli(dir);

    // /ready lists the connections; the ready_check database counts.
    const ready = await fetch(server.url + '/ready');
    expect(ready.status).toBe(200);
    const readyBody = (await ready.json()) as { connections: Array<{ kind: string; name: string; state: string }> };
    expect(readyBody.connections.map((c) => `${c.kind} ${c.name}`).sort()).toEqual(['amqp broker', 'amqp orders-in', 'mqtt notices', 'mqtt plant', 'sql audit_db', 'sql orders_db']);

    for (let n = 1; n <= 5; n++) expect((await post('/orders', { id: n, item: `item-${n}` })).status).toBe(200);
    await expect.poll(async () => (await fetch(server!.url + '/orders/5')).status, { timeout: 20_000 }).toBe(200);
    const order = (await (await fetch(server.url + '/orders/3')).json()) as Record<string, unknown>;
    expect(order).toMatchObject({ id: '3', item: 'item-3', message_id: 'order-3', created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) });
    await expect.poll(async () => (await auditRows()).length, { timeout: 10_000 }).toBe(5);
    expect(await auditRows()).toContainEqual({ order_id: 1, source: `amqp:orders-in > mqtt:e2e/${id}/orders/1/stored` });

    // A body that is not JSON: dead-lettered at once, with the reason, as it came.
    expect((await post('/raw', {})).status).toBe(200);
    const deadOf = async () => JSON.parse(await svc(dir, 'queue', 'list', '--channel', 'amqp:orders-in', '--state', 'dead', '--json')) as Array<{ id: number; lastError: { kind: string; message: string } }>;
    await expect.poll(async () => (await deadOf()).length, { timeout: 15_000 }).toBe(1);
    expect((await deadOf())[0]!.lastError).toMatchObject({ kind: 'MessageFormatError', message: expect.stringContaining('Invalid JSON') });

    // Restarted: the channel declares and consumes again, and the dead letter is still there.
    expect(await server.stop()).toBe(0);
    server = await startCli(dir);
    for (let n = 6; n <= 8; n++) expect((await post('/orders', { id: n, item: `item-${n}` })).status).toBe(200);
    await expect.poll(async () => (await auditRows()).length, { timeout: 20_000 }).toBe(8);
    const { rows } = await pgClient.query(`SELECT count(*)::int AS n FROM ${ORDERS}`);
    expect(rows[0].n).toBe(8);
    // The dead letter outlived the restart.
    expect((await deadOf()).length).toBe(1);
    // Two CLI starts and the waits above: 30 s (the suite's default) was hit on a loaded machine.
  }, 90_000);
});
