import { randomBytes } from 'node:crypto';
import type { SFTPWrapper, Stats } from 'ssh2';
import type SftpClient from 'ssh2-sftp-client';
import { onFirstUse } from '../../../sdk/plugin/index.ts';
import { fingerprintOf, type PinnedKey } from './host-key.ts';

/** What a session logs in with (resolved at each connect). */
export interface Credentials {
  password?: string | undefined;
  privateKey?: string | undefined;
  passphrase?: string | undefined;
}

export interface SessionOptions {
  name: string;
  host: string;
  port: number;
  username: string;
  pinned: PinnedKey;
  connectTimeoutMs: number;
  keepaliveMs: number;
}

/** The server presented another key than the pinned one: nothing was sent, the connection is closed. */
export class HostKeyMismatch extends Error {
  constructor(
    readonly presented: string,
    readonly pinned: string,
  ) {
    super(`the server's host key ${presented} is not the pinned ${pinned}`);
    this.name = 'HostKeyMismatch';
  }
}

/** An SFTP status answer (no such file, permission denied, failure…): the session is still good. */
export function sftpStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}
export const NO_SUCH_FILE = 2;
export const PERMISSION_DENIED = 3;

/** How many read or write requests of a transfer are in flight at once. */
const IN_FLIGHT = 16;
const CHUNK = 32 * 1024;

/** ssh2 and its SFTP client, loaded by the first session. */
const sftpClientClass = onFirstUse<typeof SftpClient>(import.meta.url, 'ssh2-sftp-client');

/**
 * One SSH connection with its SFTP channel, opened with the host key checked before login (ssh2
 * calls hostVerifier during the key exchange, before any credential is sent). The operations are
 * the raw SFTP ones, promisified, so that errors keep their SFTP status codes.
 */
export class SftpSession {
  broken = false;
  idleSince = 0;
  readonly id = randomBytes(4).toString('hex');

  private constructor(
    private readonly client: SftpClient,
    private readonly sftp: SFTPWrapper,
  ) {}

  static async open(options: SessionOptions, credentials: Credentials): Promise<SftpSession> {
    let presented: string | undefined;
    let session: SftpSession | undefined;
    const markBroken = () => {
      if (session) session.broken = true;
    };
    const client = new (sftpClientClass())(options.name, { error: markBroken, end: markBroken, close: markBroken });
    try {
      const sftp = await client.connect({
        host: options.host,
        port: options.port,
        username: options.username,
        ...credentials,
        readyTimeout: options.connectTimeoutMs,
        keepaliveInterval: options.keepaliveMs,
        keepaliveCountMax: 3,
        ...(options.pinned.type ? { algorithms: { serverHostKey: [options.pinned.type as 'ssh-ed25519'] } } : {}),
        hostVerifier: (key: Buffer) => {
          presented = fingerprintOf(key);
          return presented === options.pinned.fingerprint;
        },
      });
      session = new SftpSession(client, sftp);
      return session;
    } catch (err) {
      void client.end().catch(() => undefined);
      if (presented !== undefined && presented !== options.pinned.fingerprint) throw new HostKeyMismatch(presented, options.pinned.fingerprint);
      throw err;
    }
  }

  private call<T>(run: (done: (err: Error | undefined | null, value?: T) => void) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      run((err, value) => (err ? reject(err) : resolve(value as T)));
    });
  }

  /** The entry at path itself (a symlink is not followed); undefined when there is none. */
  async lstat(path: string): Promise<Stats | undefined> {
    try {
      return await this.call<Stats>((done) => this.sftp.lstat(path, done));
    } catch (err) {
      if (sftpStatus(err) === NO_SUCH_FILE) return undefined;
      throw err;
    }
  }

  readdir(path: string) {
    return this.call<Array<{ filename: string; attrs: Stats }>>((done) => this.sftp.readdir(path, done));
  }

  /**
   * The whole file, refused (`tooLarge`) when its size is over maxBytes before a byte is read, or
   * when it grew past it while being read.
   */
  async read(path: string, maxBytes: number, tooLarge: (size: number) => Error): Promise<Buffer> {
    const handle = await this.call<Buffer>((done) => this.sftp.open(path, 'r', done));
    try {
      const size = (await this.call<Stats>((done) => this.sftp.fstat(handle, done))).size;
      if (size > maxBytes) throw tooLarge(size);
      const chunks: Buffer[] = [];
      let position = 0;
      for (;;) {
        const batch: Array<Promise<Buffer>> = [];
        for (let i = 0; i < IN_FLIGHT && (position < size || i === 0); i++, position += CHUNK) batch.push(this.readChunk(handle, position));
        const got = await Promise.all(batch);
        chunks.push(...got);
        const total = chunks.reduce((n, c) => n + c.length, 0);
        if (total > maxBytes) throw tooLarge(total);
        // A short chunk is the end of the file (also for a file that grew past its size).
        if (got.some((c) => c.length < CHUNK)) return Buffer.concat(chunks);
      }
    } finally {
      this.sftp.close(handle, () => undefined);
    }
  }

  private readChunk(handle: Buffer, position: number): Promise<Buffer> {
    const buffer = Buffer.allocUnsafe(CHUNK);
    return new Promise((resolve, reject) => {
      this.sftp.read(handle, buffer, 0, CHUNK, position, (err, bytesRead) => {
        // End of file is answered as an EOF status by some servers, as 0 bytes by others.
        if (err && sftpStatus(err) !== 1) reject(err);
        else resolve(buffer.subarray(0, err ? 0 : bytesRead));
      });
    });
  }

  /** Writes content as the file at path: a new file ('wx', fails when it exists) or replacing it ('w'). */
  async write(path: string, content: Buffer, flags: 'w' | 'wx', mode: number | undefined): Promise<void> {
    const handle = await this.call<Buffer>((done) => this.sftp.open(path, flags, mode === undefined ? {} : { mode }, done));
    let closed = false;
    try {
      for (let at = 0; at < content.length || at === 0; at += CHUNK * IN_FLIGHT) {
        const batch: Array<Promise<void>> = [];
        for (let i = 0; i < IN_FLIGHT; i++) {
          const start = at + i * CHUNK;
          if (start >= content.length) break;
          const length = Math.min(CHUNK, content.length - start);
          batch.push(this.call<void>((done) => this.sftp.write(handle, content, start, length, start, done)));
        }
        await Promise.all(batch);
        if (content.length === 0) break;
      }
      closed = true;
      await this.call<void>((done) => this.sftp.close(handle, done));
    } finally {
      if (!closed) this.sftp.close(handle, () => undefined);
    }
  }

  /** Plain SFTP rename: fails when `to` exists (on OpenSSH). */
  rename(from: string, to: string): Promise<void> {
    return this.call<void>((done) => this.sftp.rename(from, to, done));
  }

  /** Whether the server does posix-rename@openssh.com (rename replacing the target, atomically). */
  get hasPosixRename(): boolean {
    return Boolean((this.sftp as unknown as { _extensions: Record<string, string> })._extensions['posix-rename@openssh.com']);
  }

  posixRename(from: string, to: string): Promise<void> {
    return this.call<void>((done) => this.sftp.ext_openssh_rename(from, to, done));
  }

  unlink(path: string): Promise<void> {
    return this.call<void>((done) => this.sftp.unlink(path, done));
  }

  rmdir(path: string): Promise<void> {
    return this.call<void>((done) => this.sftp.rmdir(path, done));
  }

  mkdir(path: string): Promise<void> {
    return this.call<void>((done) => this.sftp.mkdir(path, done));
  }

  /** Closes the connection (in the background: nothing waits on a server that went away). */
  close(): void {
    this.broken = true;
    void this.client.end().catch(() => undefined);
  }
}
