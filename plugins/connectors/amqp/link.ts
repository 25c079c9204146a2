import { readFileSync } from 'node:fs';
import type amqp from 'amqplib';
import type { ChannelModel, Options } from 'amqplib';
import type { Logger } from 'pino';
import { ConnectionMeter, onFirstUse, SvcError, type KernelApi } from '../../../sdk/plugin/index.ts';
import { Nap, reconnectDelayMs } from '../shared/backoff.ts';
import { resolvePassword } from '../shared/credentials.ts';
import type { AmqpConnectionEntry } from './schema.ts';

/** The client library, loaded by the first connection. */
const amqpClient = onFirstUse<typeof amqp>(import.meta.url, 'amqplib');

export type LinkState = 'idle' | 'connecting' | 'up' | 'down';

/** A short reason, safe for /ready: never the address, user or password. */
export function safeReason(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ETIMEDOUT' || /timed? ?out/i.test(message)) return 'connect timed out';
  if (code === 'ECONNRESET') return 'connection reset';
  if (/ACCESS_REFUSED|ACCESS-REFUSED|403/.test(message)) return 'access refused (user, password or vhost)';
  if (/NOT_ALLOWED|530/.test(message)) return 'vhost not allowed';
  if (/certificate|self.signed|SSL|TLS/i.test(message)) return 'TLS handshake failed';
  return 'cannot connect';
}

/**
 * One AMQP connection of an amqp_connection entry, kept open: it connects when first asked
 * (`start`), and when the broker goes away it connects again with exponential backoff and full
 * jitter (reconnect.min_ms doubling up to max_ms), re-reading a password_secret at each attempt.
 * Users register `onUp` to (re)build their channels on each new connection. Our own loop rather
 * than amqplib's recovering model: the password is resolved per attempt, and the state and
 * reason are ours to report.
 */
export class AmqpLink {
  state: LinkState = 'idle';
  reason: string | undefined = 'not opened yet';
  readonly meter: ConnectionMeter;
  private connection: ChannelModel | undefined;
  private waiters = new Set<() => void>();
  private readonly upListeners = new Set<(conn: ChannelModel) => void>();
  private closed = false;
  private started = false;
  private everUp = false;
  private readonly nap = new Nap();

  constructor(
    readonly entry: AmqpConnectionEntry,
    private readonly kernel: KernelApi,
    private readonly log: Logger,
    private readonly random: () => number = Math.random,
  ) {
    this.meter = new ConnectionMeter(kernel.clock);
  }

  /** Called with every new connection (the first and each after a reconnect). */
  onUp(listener: (conn: ChannelModel) => void): () => void {
    this.upListeners.add(listener);
    if (this.connection) listener(this.connection);
    return () => this.upListeners.delete(listener);
  }

  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.state = 'connecting';
    this.reason = undefined;
    void this.loop();
  }

  /** The connection now, waiting up to `timeoutMs` for one; SERVICE_UNAVAILABLE when none comes. */
  async current(timeoutMs: number): Promise<ChannelModel> {
    this.start();
    if (this.connection) return this.connection;
    if (this.closed) throw new SvcError('SERVICE_UNAVAILABLE', `AMQP connection '${this.entry.name}' is closed`);
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.waiters.add(done);
    });
    if (this.connection) return this.connection;
    throw new SvcError('SERVICE_UNAVAILABLE', `AMQP connection '${this.entry.name}' is ${this.state}${this.reason ? ` (${this.reason})` : ''}`);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.nap.wake();
    for (const w of [...this.waiters]) w();
    const conn = this.connection;
    this.connection = undefined;
    this.state = 'idle';
    this.reason = 'closed';
    if (conn) await conn.close().catch(() => {});
  }

  private async loop(): Promise<void> {
    let attempt = 0;
    while (!this.closed) {
      let conn: ChannelModel | undefined;
      try {
        conn = await this.open();
      } catch (err) {
        this.state = 'down';
        this.reason = safeReason(err);
        this.meter.done('connect', 'error');
        this.log.warn({ connection: this.entry.name, reason: this.reason, code: (err as { code?: unknown }).code }, 'AMQP connect failed');
      }
      if (conn && this.closed) {
        await conn.close().catch(() => {});
        return;
      }
      if (conn) {
        attempt = 0;
        await this.serve(conn);
        if (this.closed) return;
      }
      attempt++;
      await this.nap.sleep(reconnectDelayMs(this.entry.reconnect, attempt, this.random));
    }
  }

  /** Holds the connection until it closes. */
  private async serve(conn: ChannelModel): Promise<void> {
    const lost = new Promise<unknown>((resolve) => conn.once('close', resolve));
    // An 'error' precedes 'close'; without a listener it would be thrown.
    conn.on('error', (err: Error) => this.log.warn({ connection: this.entry.name, reason: safeReason(err) }, `AMQP connection error: ${err.message.slice(0, 200)}`));
    conn.on('blocked', (why: string) => this.log.warn({ connection: this.entry.name, why }, 'AMQP connection blocked by the broker'));
    this.connection = conn;
    this.state = 'up';
    this.reason = undefined;
    if (this.everUp) this.meter.reconnects++;
    this.everUp = true;
    this.meter.done('connect', 'ok');
    this.log.info({ connection: this.entry.name }, 'AMQP connection up');
    for (const w of [...this.waiters]) w();
    for (const listener of this.upListeners) {
      try {
        listener(conn);
      } catch (err) {
        this.log.error({ err, connection: this.entry.name }, 'AMQP connection listener failed');
      }
    }
    await lost;
    this.connection = undefined;
    if (this.closed) return;
    this.state = 'connecting';
    this.reason = 'connection lost; reconnecting';
    this.log.warn({ connection: this.entry.name }, 'AMQP connection lost; reconnecting');
  }

  private async open(): Promise<ChannelModel> {
    const e = this.entry;
    const socket: Record<string, unknown> = { timeout: e.connect_timeout_ms, clientProperties: { connection_name: `svc ${e.name}` } };
    if (e.tls) {
      socket.rejectUnauthorized = e.tls.reject_unauthorized;
      if (e.tls.ca_file) socket.ca = [readFileSync(e.tls.ca_file)];
      if (e.tls.server_name) socket.servername = e.tls.server_name;
    }
    return amqpClient().connect(await this.target(), socket);
  }

  private async target(): Promise<Options.Connect> {
    const e = this.entry;
    if (e.url !== undefined) {
      const u = new URL(e.url);
      const path = u.pathname.slice(1);
      return {
        protocol: u.protocol.slice(0, -1),
        hostname: u.hostname.replace(/^\[|\]$/g, ''),
        port: u.port ? Number(u.port) : u.protocol === 'amqps:' ? 5671 : 5672,
        username: u.username ? decodeURIComponent(u.username) : 'guest',
        password: u.password ? decodeURIComponent(u.password) : 'guest',
        vhost: path === '' ? '/' : decodeURIComponent(path),
        heartbeat: e.heartbeat_s,
      };
    }
    const tls = e.tls !== undefined;
    return {
      protocol: tls ? 'amqps' : 'amqp',
      hostname: e.host as string,
      port: e.port ?? (tls ? 5671 : 5672),
      username: e.username ?? 'guest',
      password: (await resolvePassword(this.kernel, e)) ?? 'guest',
      vhost: e.vhost,
      heartbeat: e.heartbeat_s,
    };
  }
}
