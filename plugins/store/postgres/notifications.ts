import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { ChangeListeners, MAX_NOTIFY_PAYLOAD } from '../../../sdk/plugin/index.ts';

const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;
/** A connection that died without a word (a cut network) is found by this query failing. */
const PING_EVERY_MS = 10_000;
const PING_TIMEOUT_MS = 5_000;

/** What travels in a NOTIFY: the sending store, the topic, the payload. */
interface Envelope {
  o: string;
  t: string;
  p: string;
}

/**
 * Change notifications over PostgreSQL's LISTEN/NOTIFY (DataStore.notify/listen). One channel per
 * schema, since NOTIFY reaches the whole database and each schema is its own svc. Sending takes a
 * pool connection; receiving holds one dedicated connection outside the pool (a pooled one
 * would be handed to other work and lose its LISTEN). When that connection fails it is replaced
 * with growing pauses, and every listener's onResync runs once it listens again, since
 * notifications sent meanwhile are lost.
 */
export class PgNotifications {
  /** Tells this store's own notifications from others' (a session receives its own NOTIFYs). */
  private readonly origin = randomBytes(8).toString('hex');
  private readonly listeners: ChangeListeners;
  private client: pg.Client | undefined;
  private closed = false;
  private retryMs = RETRY_FIRST_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  /** Connects made (tests: a reconnect happened). */
  connects = 0;

  constructor(
    private readonly url: string,
    private readonly pool: pg.Pool,
    readonly channel: string,
    private readonly log: Logger,
  ) {
    this.listeners = new ChangeListeners((err, topic) => log.error({ err, topic }, 'postgres: a change listener failed'));
  }

  /** The channel of a schema: an identifier of at most 63 bytes, whatever the schema's name. */
  static channelOf(schema: string): string {
    const name = `svc_changes:${schema}`;
    return Buffer.byteLength(name) <= 63 ? name : `svc_changes:${createHash('sha256').update(schema).digest('hex').slice(0, 32)}`;
  }

  /** Listens before the store is handed out, so a node misses nothing sent after it opened. */
  async start(): Promise<void> {
    await this.connect();
  }

  async notify(topic: string, payload = ''): Promise<void> {
    const text = JSON.stringify({ o: this.origin, t: topic, p: payload } satisfies Envelope);
    if (Buffer.byteLength(text) > MAX_NOTIFY_PAYLOAD + 100) throw new Error(`notification of '${topic}' too large (${Buffer.byteLength(text)} bytes): send ids, not data`);
    await this.pool.query('SELECT pg_notify($1, $2)', [this.channel, text]);
  }

  listen(topic: string, onMessage: (payload: string) => void | Promise<void>, onResync?: () => void | Promise<void>): () => void {
    return this.listeners.add(topic, onMessage, onResync);
  }

  /** Cuts the listening connection as a failure would (tests). */
  get backendPid(): number | undefined {
    return (this.client as unknown as { processID?: number } | undefined)?.processID;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: 'svc-listen', keepAlive: true, connectionTimeoutMillis: 5_000 });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, undefined));
    client.on('notification', (msg) => this.received(msg.channel, msg.payload));
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.retryMs = RETRY_FIRST_MS;
    this.connects++;
    clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => this.ping(client), PING_EVERY_MS);
    this.pingTimer.unref();
  }

  private received(channel: string, text: string | undefined): void {
    if (channel !== this.channel || text === undefined) return;
    let envelope: Envelope;
    try {
      envelope = JSON.parse(text) as Envelope;
    } catch {
      return;
    }
    if (envelope.o === this.origin || typeof envelope.t !== 'string') return;
    this.listeners.deliver(envelope.t, typeof envelope.p === 'string' ? envelope.p : '');
  }

  private ping(client: pg.Client): void {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
    });
    Promise.race([client.query('SELECT 1'), timeout])
      .catch((err: Error) => this.lost(client, err))
      .finally(() => clearTimeout(timer));
  }

  /** The listening connection failed: replace it, then have every listener reload. */
  private lost(client: pg.Client, err: Error | undefined): void {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    clearInterval(this.pingTimer);
    this.log.warn({ err: err?.message }, 'postgres: the connection listening for changes was lost; reconnecting');
    void client.end().catch(() => undefined);
    this.retry();
  }

  private retry(): void {
    const wait = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
    this.retryTimer = setTimeout(() => {
      this.connect().then(
        () => {
          if (this.closed) return;
          this.log.info('postgres: listening for changes again; listeners reload what they cache');
          this.listeners.resync();
        },
        (e: Error) => {
          if (this.closed) return;
          this.log.warn({ err: e.message, retryInMs: this.retryMs }, 'postgres: cannot listen for changes yet');
          this.retry();
        },
      );
    }, wait);
    this.retryTimer.unref();
  }
}
