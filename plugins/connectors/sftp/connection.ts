import { readFile } from 'node:fs/promises';
import { ConnectionMeter, SvcError, type ConnectionReport, type KernelApi } from '../../../sdk/plugin/index.ts';
import { resolvePassword } from '../shared/credentials.ts';
import { settleWithin, waitLimit } from '../shared/wait.ts';
import { parsePinnedKey, type PinnedKey } from './host-key.ts';
import type { SftpEntry } from './schema.ts';
import { HostKeyMismatch, SftpSession, sftpStatus, type Credentials } from './session.ts';

/** Reasons shown in /ready and to services: short, with no host, user or secret. */
export function safeReason(err: unknown): string {
  if (err instanceof HostKeyMismatch) return `host key mismatch: the server presented ${err.presented}, the pinned key is ${err.pinned}`;
  const e = err as { code?: unknown; message?: unknown; level?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (e?.level === 'client-authentication' || /authentication methods failed/i.test(message)) return 'login refused';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ECONNRESET' || /reset/i.test(message)) return 'connection reset';
  if (/timed? ?out/i.test(message) || code === 'ETIMEDOUT') return 'timed out';
  if (/no response from server|not connected|closed|ended/i.test(message)) return 'connection lost';
  if (/secret|private key|ENOENT/.test(message)) return 'credentials unavailable';
  return 'connection failed';
}

async function secretValue(kernel: KernelApi, name: string): Promise<string> {
  const secrets = kernel.lookup('secrets.named');
  if (!secrets) throw new Error(`secret '${name}' needs the secrets plugin, which is off`);
  const value = await secrets.value(name);
  if (value === undefined) throw new Error(`secret '${name}' has no value yet (svc secret set ${name})`);
  return value;
}

/**
 * One `sftp_connection`: a pool of SSH sessions (opened on demand, at most pool_size, closed
 * after idle_ms unused), its meter and its state for /ready. A session that failed at the
 * connection level is closed, never reused; the next call opens a new one (after a failed
 * connect, calls fail fast until the reconnect backoff has passed).
 */
export class SftpConnection {
  readonly meter: ConnectionMeter;
  private readonly pinned: PinnedKey;
  private idle: SftpSession[] = [];
  private busy = 0;
  private opening = 0;
  private waiters: Array<() => void> = [];
  private state: ConnectionReport['state'] = 'idle';
  private reason: string | undefined;
  private failures = 0;
  private retryAt = 0;
  private wasDown = false;
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    readonly entry: SftpEntry,
    private readonly kernel: KernelApi,
  ) {
    this.meter = new ConnectionMeter(kernel.clock);
    this.pinned = parsePinnedKey(entry.host_key) as PinnedKey;
  }

  /** Where the connection's root is, for logs and /ready (no user, no secret). */
  describe(root = ''): string {
    const base = this.entry.root === '.' ? '' : `/${this.entry.root.replace(/^\/+/, '')}`;
    return `sftp://${this.entry.name}${base}${root ? `/${root}` : ''}`;
  }

  private async credentials(): Promise<Credentials> {
    const e = this.entry;
    const credentials: Credentials = {};
    credentials.password = await resolvePassword(this.kernel, e);
    if (e.private_key_secret !== undefined) credentials.privateKey = await secretValue(this.kernel, e.private_key_secret);
    if (e.private_key_file !== undefined) credentials.privateKey = await readFile(e.private_key_file, 'utf8');
    credentials.passphrase = e.passphrase_secret !== undefined ? await secretValue(this.kernel, e.passphrase_secret) : e.passphrase;
    return credentials;
  }

  private async connect(): Promise<SftpSession> {
    const e = this.entry;
    if (this.kernel.clock.now() < this.retryAt) throw new SvcError('SERVICE_UNAVAILABLE', `SFTP connection '${e.name}' is down (${this.reason}); next attempt in ${Math.ceil(this.retryAt - this.kernel.clock.now())} ms`);
    if (this.state !== 'up') this.state = 'connecting';
    try {
      const options = { name: e.name, host: e.host, port: e.port, username: e.username, pinned: this.pinned, connectTimeoutMs: e.connect_timeout_ms, keepaliveMs: e.keepalive_ms };
      const session = await SftpSession.open(options, await this.credentials());
      if (this.wasDown) this.meter.reconnects++;
      this.wasDown = false;
      this.failures = 0;
      this.retryAt = 0;
      this.state = 'up';
      this.reason = undefined;
      this.sweep();
      return session;
    } catch (err) {
      this.down(err);
      this.failures++;
      this.retryAt = this.kernel.clock.now() + Math.min(e.reconnect.max_ms, e.reconnect.min_ms * 2 ** (this.failures - 1));
      throw new SvcError('SERVICE_UNAVAILABLE', `SFTP connection '${e.name}' cannot connect: ${this.reason}`);
    }
  }

  private down(err: unknown): void {
    this.state = 'down';
    this.wasDown = true;
    this.reason = safeReason(err);
    const fields = { plugin: 'sftp', connection: this.entry.name, reason: (err as Error)?.message };
    if (err instanceof HostKeyMismatch) this.kernel.log.error({ ...fields, presented: err.presented, pinned: err.pinned }, `SFTP connection refused: the server's host key ${err.presented} is not the pinned ${err.pinned}`);
    else this.kernel.log.warn(fields, 'SFTP connection failed');
  }

  /** A session for one call: an idle one, a new one while under pool_size, or the next one released. */
  async acquire(timeLeftMs = Infinity): Promise<SftpSession> {
    const wait = waitLimit(this.entry.connect_timeout_ms, 'connect_timeout_ms', timeLeftMs);
    const until = performance.now() + wait.ms;
    for (;;) {
      if (this.closed) throw new SvcError('SERVICE_UNAVAILABLE', `SFTP connection '${this.entry.name}' was removed from the config`);
      const session = this.idle.pop();
      if (session) {
        if (session.broken) continue;
        this.busy++;
        return session;
      }
      if (this.busy + this.opening < this.entry.pool_size) {
        this.opening++;
        const opening = this.connect().then(
          (opened) => (this.opening--, this.busy++, opened),
          (err: unknown) => {
            this.opening--;
            throw err;
          },
        );
        if (wait.ms >= this.entry.connect_timeout_ms) return opening;
        // Cut short by the caller's time limit: a session that opens later goes to the idle ones.
        const opened = await settleWithin(opening, Math.max(0, until - performance.now()), (late) => this.release(late));
        if (opened) return opened;
        throw new SvcError('SERVICE_UNAVAILABLE', `SFTP connection '${this.entry.name}' opened no session ${wait.within}`);
      }
      const left = until - performance.now();
      if (left <= 0) throw new SvcError('SERVICE_UNAVAILABLE', `SFTP connection '${this.entry.name}' has no free session ${wait.within} (pool_size ${this.entry.pool_size})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  release(session: SftpSession): void {
    this.busy--;
    if (session.broken || this.closed) session.close();
    else {
      session.idleSince = performance.now();
      this.idle.push(session);
    }
    this.waiters.shift()?.();
  }

  /**
   * Runs `work` on a session, timed and counted as `operation`, within operation_timeout_ms. A
   * failure below SFTP (the connection dropped, timed out) closes the session and is
   * ServiceUnavailable; an SFTP status answer the work did not turn into an SvcError is BadGateway.
   */
  async run<T>(operation: string, work: (session: SftpSession) => Promise<T>, timeLeftMs = Infinity): Promise<T> {
    const at = this.meter.start();
    const ends = performance.now() + timeLeftMs;
    let session: SftpSession | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      session = await this.acquire(timeLeftMs);
      const current = session;
      const wait = waitLimit(this.entry.operation_timeout_ms, 'operation_timeout_ms', Math.max(0, Math.floor(ends - performance.now())));
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          current.broken = true;
          // The server's fault when its own limit ran out (the connection is marked down); the caller's time when that did.
          if (wait.ms < this.entry.operation_timeout_ms) reject(new SvcError('SERVICE_UNAVAILABLE', `SFTP connection '${this.entry.name}': ${operation} not done ${wait.within}`));
          else reject(new Error(`operation timed out after ${wait.ms} ms`));
        }, wait.ms);
      });
      const value = await Promise.race([work(current), timeout]);
      this.meter.done(operation, 'ok', at);
      return value;
    } catch (err) {
      this.meter.done(operation, 'error', at);
      throw this.failure(err, session);
    } finally {
      clearTimeout(timer);
      if (session) this.release(session);
    }
  }

  /** An error as the caller gets it; a connection-level one marks the session broken. */
  failure(err: unknown, session: SftpSession | undefined): SvcError {
    if (err instanceof SvcError) return err;
    const status = sftpStatus(err);
    if (status !== undefined) return new SvcError('BAD_GATEWAY', `SFTP server '${this.entry.name}' refused: ${(err as Error).message}`);
    if (session) session.broken = true;
    this.down(err);
    return new SvcError('SERVICE_UNAVAILABLE', `SFTP connection '${this.entry.name}' failed during the operation: ${safeReason(err)}`);
  }

  /** Closes sessions unused for idle_ms (checked every few seconds while any is open). */
  private sweep(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(
      () => {
        const now = performance.now();
        const keep = this.idle.filter((s) => !s.broken && now - s.idleSince < this.entry.idle_ms);
        for (const s of this.idle) if (!keep.includes(s)) s.close();
        this.idle = keep;
        if (this.idle.length === 0 && this.busy === 0 && this.opening === 0) {
          clearInterval(this.sweeper);
          this.sweeper = undefined;
        }
      },
      Math.min(this.entry.idle_ms, 5000),
    );
    this.sweeper.unref();
  }

  /** Opens a session and hands it back (ready_check connections, at start and while down). */
  async probe(): Promise<void> {
    await this.run('connect', async () => undefined).catch(() => undefined);
  }

  report(): ConnectionReport {
    if (this.entry.ready_check && this.state === 'down' && this.kernel.clock.now() >= this.retryAt && this.opening === 0) void this.probe();
    return {
      kind: 'sftp',
      name: this.entry.name,
      role: 'connection',
      state: this.state,
      ...(this.reason === undefined ? {} : { reason: this.reason }),
      readyCheck: this.entry.ready_check,
      meter: this.meter,
      pool: { size: this.entry.pool_size, busy: this.busy, idle: this.idle.length, waiting: this.waiters.length },
    };
  }

  /** Closes idle sessions now and busy ones as they are released. */
  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const s of this.idle) s.close();
    this.idle = [];
    for (const wake of this.waiters.splice(0)) wake();
  }
}
