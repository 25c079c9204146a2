import { callHost } from './internal/runtime.ts';
import { fromBase64, toBase64 } from './internal/bytes.ts';

/** One entry of a folder on an SFTP server. A `symlink` is the link itself: svc never follows one. */
export interface SftpEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  /** Last modification, ISO 8601 (the server keeps whole seconds). */
  modifiedAt: string;
}

export interface SftpPutOptions {
  /** Permission bits of a new file, e.g. 0o640; the server's umask applies. */
  mode?: number;
  /** Replace a file of that name; default true. false: Conflict (409) when it exists. */
  overwrite?: boolean;
  /**
   * Default true: write to a hidden temporary name in the same folder (`.<name>.<random>.svc-part`),
   * then rename it, so that a reader never sees half a file, and a transfer that fails leaves none.
   */
  atomic?: boolean;
}

export interface SftpGetOptions {
  /** 'utf8' (default): a string; 'base64': base64 text; 'bytes': a Uint8Array. */
  encoding?: 'utf8' | 'base64' | 'bytes';
}

/**
 * An SFTP connection of config: `sftp('partner')`. Paths are relative to the connection's root
 * and `/`-separated; one that would leave it (`..`, absolute, NUL, backslash) is BadRequest before
 * anything is sent, and so is a symlink in the way of a get or put. Errors: NotFound (no such
 * connection, file or folder), Forbidden (not allowed to this service, or the server refused),
 * Conflict (exists, with overwrite false), PayloadTooLarge (413: a file over the connection's
 * max_file_bytes),
 * ServiceUnavailable (the server cannot be reached, its host key is not the pinned one, or the
 * connection dropped during the operation: an atomic put then left nothing under the name).
 */
export interface SftpConnection {
  readonly name: string;
  put(path: string, content: string | Uint8Array, options?: SftpPutOptions): Promise<void>;
  get(path: string, options?: { encoding?: 'utf8' | 'base64' }): Promise<string>;
  get(path: string, options: { encoding: 'bytes' }): Promise<Uint8Array>;
  list(dir?: string): Promise<SftpEntry[]>;
  stat(path: string): Promise<SftpEntry>;
  /** Moves a file; `overwrite` (default false) replaces `to` when it exists, else Conflict. */
  rename(from: string, to: string, options?: { overwrite?: boolean }): Promise<void>;
  /** Removes a file (a symlink itself), or an empty folder. */
  delete(path: string): Promise<void>;
  /** Creates the folder and its parents; nothing when it exists. */
  mkdir(path: string): Promise<void>;
}

function checkPath(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new TypeError(`sftp: ${what} must be a string`);
  return value;
}

class SftpHandle implements SftpConnection {
  constructor(readonly name: string) {}

  async put(path: string, content: string | Uint8Array, options: SftpPutOptions = {}): Promise<void> {
    checkPath(path, 'path');
    let wire: { content: string; encoding: 'utf8' | 'base64' };
    if (typeof content === 'string') wire = { content, encoding: 'utf8' };
    else if (content instanceof Uint8Array) wire = { content: toBase64(content), encoding: 'base64' };
    else throw new TypeError(`sftp('${this.name}').put: content must be a string or a Uint8Array`);
    await callHost('sftp.put', { connection: this.name, path, ...wire, mode: options.mode, overwrite: options.overwrite, atomic: options.atomic });
  }

  get(path: string, options?: { encoding?: 'utf8' | 'base64' }): Promise<string>;
  get(path: string, options: { encoding: 'bytes' }): Promise<Uint8Array>;
  async get(path: string, options: SftpGetOptions = {}): Promise<string | Uint8Array> {
    checkPath(path, 'path');
    const encoding = options.encoding ?? 'utf8';
    if (encoding !== 'utf8' && encoding !== 'base64' && encoding !== 'bytes') throw new TypeError(`sftp('${this.name}').get: encoding is 'utf8', 'base64' or 'bytes'`);
    const reply = (await callHost('sftp.get', { connection: this.name, path, encoding: encoding === 'utf8' ? 'utf8' : 'base64' })) as { content: string };
    return encoding === 'bytes' ? fromBase64(reply.content) : reply.content;
  }

  async list(dir = ''): Promise<SftpEntry[]> {
    return (await callHost('sftp.list', { connection: this.name, path: checkPath(dir, 'dir') })) as SftpEntry[];
  }

  async stat(path: string): Promise<SftpEntry> {
    return (await callHost('sftp.stat', { connection: this.name, path: checkPath(path, 'path') })) as SftpEntry;
  }

  async rename(from: string, to: string, options: { overwrite?: boolean } = {}): Promise<void> {
    await callHost('sftp.rename', { connection: this.name, from: checkPath(from, 'from'), to: checkPath(to, 'to'), overwrite: options.overwrite });
  }

  async delete(path: string): Promise<void> {
    await callHost('sftp.delete', { connection: this.name, path: checkPath(path, 'path') });
  }

  async mkdir(path: string): Promise<void> {
    await callHost('sftp.mkdir', { connection: this.name, path: checkPath(path, 'path') });
  }
}

/** The SFTP connection `name` of config (`sftp_connection:`). Credentials and the server's address stay on the host. */
export function sftp(name: string): SftpConnection {
  if (typeof name !== 'string' || name === '') throw new TypeError('sftp: name must be a non-empty string');
  return new SftpHandle(name);
}
