import { SvcError } from '../../../sdk/plugin/index.ts';
import type { FileFolder, FolderEntry, SftpFolders } from '../../capabilities.ts';
import type { SftpConnection } from './connection.ts';
import { RootedFolder } from './folder.ts';
import { remotePath, segmentsOf } from './paths.ts';
import type { SftpSession } from './session.ts';

/**
 * A FileFolder on one session of a connection, held from `open` to `release`: the file pickup
 * lists, reads and moves a batch on it without going back to the pool each time. Operations are
 * counted in the connection's meter as the services' are.
 */
class SessionFolder implements FileFolder {
  private released = false;
  private readonly folder: RootedFolder;

  constructor(
    private readonly conn: SftpConnection,
    private readonly session: SftpSession,
    base: string,
    readonly describe: string,
  ) {
    this.folder = new RootedFolder(session, base);
  }

  private async run<T>(operation: string, work: (folder: RootedFolder) => Promise<T>): Promise<T> {
    if (this.released) throw new SvcError('SERVICE_UNAVAILABLE', `${this.describe} was released`);
    if (this.session.broken) throw new SvcError('SERVICE_UNAVAILABLE', `the SFTP session of ${this.describe} was lost`);
    const at = this.conn.meter.start();
    try {
      const value = await work(this.folder);
      this.conn.meter.done(operation, 'ok', at);
      return value;
    } catch (err) {
      this.conn.meter.done(operation, 'error', at);
      throw this.conn.failure(err, this.session);
    }
  }

  list(dir: string): Promise<FolderEntry[]> {
    return this.run('list', (f) => f.list(dir));
  }
  read(path: string, maxBytes: number): Promise<Buffer> {
    return this.run('get', (f) => f.read(path, maxBytes));
  }
  rename(from: string, to: string): Promise<void> {
    return this.run('rename', (f) => f.rename(from, to, { replace: true }));
  }
  remove(path: string): Promise<void> {
    return this.run('delete', (f) => f.remove(path));
  }
  mkdir(path: string): Promise<void> {
    return this.run('mkdir', (f) => f.mkdir(path));
  }
  exists(path: string): Promise<boolean> {
    return this.run('stat', (f) => f.exists(path));
  }
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.conn.release(this.session);
  }
}

/** The `connectors.sftp` capability over the plugin's connections. */
export function sftpFolders(connectionOf: (name: string) => SftpConnection | undefined): SftpFolders {
  return {
    has: (name) => connectionOf(name) !== undefined,
    async open(name, root) {
      const conn = connectionOf(name);
      if (!conn) throw new SvcError('NOT_FOUND', `No SFTP connection named '${name}'`);
      const segments = segmentsOf(root, 'root', { root: 'allowed' });
      const session = await conn.acquire();
      const folder = new SessionFolder(conn, session, remotePath(conn.entry.root, segments), conn.describe(segments.join('/')));
      // Each folder down to the root must be a real folder (not a symlink out of the connection's root).
      try {
        await new RootedFolder(session, conn.entry.root).list(segments.join('/'));
      } catch (err) {
        await folder.release();
        throw conn.failure(err, session);
      }
      return folder;
    },
  };
}
