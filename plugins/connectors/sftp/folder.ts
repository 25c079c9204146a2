import { randomBytes } from 'node:crypto';
import type { Stats } from 'ssh2';
import { SvcError } from '../../../sdk/plugin/index.ts';
import type { FolderEntry } from '../../capabilities.ts';
import { remotePath, segmentsOf } from './paths.ts';
import { type SftpSession, sftpStatus } from './session.ts';

const FAILURE = 4;

export interface WriteOptions {
  mode?: number | undefined;
  overwrite: boolean;
  atomic: boolean;
}

/** An atomic put failed with its temporary file maybe left behind: the caller removes it on a good session. */
export class PartLeft extends Error {
  constructor(
    readonly part: string,
    readonly cause: unknown,
  ) {
    super('a temporary file may be left');
  }
}

export function typeOf(attrs: Stats): FolderEntry['type'] {
  if (attrs.isSymbolicLink()) return 'symlink';
  if (attrs.isDirectory()) return 'dir';
  if (attrs.isFile()) return 'file';
  return 'other';
}

/**
 * The operations on one folder tree of a server, on one session: every path checked as text
 * (paths.ts) and then on the server, where no folder on the way may be a symlink and a file read
 * or written may not be one either (renaming or removing a symlink acts on the link itself).
 * A concurrent change on the server between the check and the operation is the server's
 * permissions' to stop: the check keeps svc from following links, not other users.
 */
export class RootedFolder {
  constructor(
    private readonly session: SftpSession,
    private readonly base: string,
  ) {}

  private at(segments: readonly string[]): string {
    return remotePath(this.base, segments);
  }

  /** Each folder on the way to segments' last one is a real folder. */
  private async checkWay(segments: readonly string[], shown: string): Promise<void> {
    for (let i = 1; i < segments.length; i++) {
      const attrs = await this.session.lstat(this.at(segments.slice(0, i)));
      const folder = segments.slice(0, i).join('/');
      if (!attrs) throw new SvcError('NOT_FOUND', `no folder '${folder}' (in ${shown})`);
      if (attrs.isSymbolicLink()) throw new SvcError('BAD_REQUEST', `'${folder}' (in ${shown}) is a symlink; svc does not follow symlinks`);
      if (!attrs.isDirectory()) throw new SvcError('BAD_REQUEST', `'${folder}' (in ${shown}) is not a folder`);
    }
  }

  /** The segments of a path to a file, its way checked, and what is there now. */
  private async target(path: string, what: string): Promise<{ segments: string[]; attrs: Stats | undefined }> {
    const segments = segmentsOf(path, what, { root: 'refused' });
    await this.checkWay(segments, path);
    return { segments, attrs: await this.session.lstat(this.at(segments)) };
  }

  async list(dir: string): Promise<FolderEntry[]> {
    const segments = segmentsOf(dir, 'folder', { root: 'allowed' });
    await this.checkWay([...segments, ''], dir || '.');
    const entries = await this.session.readdir(this.at(segments)).catch((err) => {
      if (sftpStatus(err) === 2) throw new SvcError('NOT_FOUND', `no folder '${dir}'`);
      throw err;
    });
    return entries
      .filter((e) => e.filename !== '.' && e.filename !== '..')
      .map((e) => ({ name: e.filename, type: typeOf(e.attrs), size: e.attrs.size, mtimeMs: e.attrs.mtime * 1000 }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async stat(path: string): Promise<FolderEntry> {
    const { segments, attrs } = await this.target(path, 'path');
    if (!attrs) throw new SvcError('NOT_FOUND', `no file '${path}'`);
    return { name: segments.at(-1)!, type: typeOf(attrs), size: attrs.size, mtimeMs: attrs.mtime * 1000 };
  }

  async exists(path: string): Promise<boolean> {
    try {
      return (await this.target(path, 'path')).attrs !== undefined;
    } catch (err) {
      if (err instanceof SvcError && err.code === 'NOT_FOUND') return false;
      throw err;
    }
  }

  async read(path: string, maxBytes: number): Promise<Buffer> {
    const { segments, attrs } = await this.target(path, 'path');
    if (!attrs) throw new SvcError('NOT_FOUND', `no file '${path}'`);
    if (attrs.isSymbolicLink()) throw new SvcError('BAD_REQUEST', `'${path}' is a symlink; svc does not follow symlinks`);
    if (!attrs.isFile()) throw new SvcError('BAD_REQUEST', `'${path}' is not a file`);
    const tooLarge = (size: number) => new SvcError('PAYLOAD_TOO_LARGE', `'${path}' is ${size} bytes, over the limit of ${maxBytes}`);
    if (attrs.size > maxBytes) throw tooLarge(attrs.size);
    return this.session.read(this.at(segments), maxBytes, tooLarge);
  }

  async write(path: string, content: Buffer, options: WriteOptions): Promise<void> {
    const { segments, attrs } = await this.target(path, 'path');
    if (attrs?.isSymbolicLink()) throw new SvcError('BAD_REQUEST', `'${path}' is a symlink; svc does not follow symlinks`);
    if (attrs?.isDirectory()) throw new SvcError('BAD_REQUEST', `'${path}' is a folder`);
    if (attrs && !options.overwrite) throw new SvcError('CONFLICT', `'${path}' exists (overwrite: false)`);
    const target = this.at(segments);
    const taken = () => new SvcError('CONFLICT', `'${path}' exists (overwrite: false)`);
    if (!options.atomic) {
      await this.session.write(target, content, options.overwrite ? 'w' : 'wx', options.mode).catch((err) => {
        throw sftpStatus(err) === FAILURE && !options.overwrite ? taken() : err;
      });
      return;
    }
    // A hidden name beside the target, so the rename stays on one file system.
    const part = this.at([...segments.slice(0, -1), `.${segments.at(-1)}.${randomBytes(4).toString('hex')}.svc-part`]);
    try {
      await this.session.write(part, content, 'wx', options.mode);
      if (options.overwrite) await this.replace(part, target);
      else await this.session.rename(part, target);
    } catch (err) {
      const failed = sftpStatus(err) === FAILURE && !options.overwrite ? taken() : err;
      if (this.session.broken || sftpStatus(err) === undefined) throw new PartLeft(part, failed);
      await this.session.unlink(part).catch(() => undefined);
      throw failed;
    }
  }

  /** Rename replacing `to`: posix-rename@openssh.com (atomic) when the server has it, else remove then rename. */
  private async replace(from: string, to: string): Promise<void> {
    if (this.session.hasPosixRename) return this.session.posixRename(from, to);
    await this.session.unlink(to).catch((err) => {
      if (sftpStatus(err) !== 2) throw err;
    });
    await this.session.rename(from, to);
  }

  async rename(from: string, to: string, { replace }: { replace: boolean }): Promise<void> {
    const source = await this.target(from, 'from');
    if (!source.attrs) throw new SvcError('NOT_FOUND', `no file '${from}'`);
    const dest = await this.target(to, 'to');
    if (dest.attrs?.isDirectory()) throw new SvcError('BAD_REQUEST', `'${to}' is a folder`);
    if (dest.attrs && !replace) throw new SvcError('CONFLICT', `'${to}' exists`);
    if (replace) await this.replace(this.at(source.segments), this.at(dest.segments));
    else
      await this.session.rename(this.at(source.segments), this.at(dest.segments)).catch((err) => {
        throw sftpStatus(err) === FAILURE ? new SvcError('CONFLICT', `'${to}' exists`) : err;
      });
  }

  /** Removes a file (a symlink itself), or an empty folder. */
  async remove(path: string): Promise<void> {
    const { segments, attrs } = await this.target(path, 'path');
    if (!attrs) throw new SvcError('NOT_FOUND', `no file '${path}'`);
    if (!attrs.isDirectory()) return this.session.unlink(this.at(segments));
    await this.session.rmdir(this.at(segments)).catch((err) => {
      throw sftpStatus(err) === FAILURE ? new SvcError('CONFLICT', `folder '${path}' is not empty`) : err;
    });
  }

  /** Creates the folder and its parents; nothing when it exists. */
  async mkdir(path: string): Promise<void> {
    const segments = segmentsOf(path, 'folder', { root: 'refused' });
    for (let i = 1; i <= segments.length; i++) {
      const at = this.at(segments.slice(0, i));
      const shown = segments.slice(0, i).join('/');
      let attrs = await this.session.lstat(at);
      if (!attrs) {
        // Made by someone else meanwhile is as good as made.
        await this.session.mkdir(at).catch(() => undefined);
        attrs = await this.session.lstat(at);
        if (!attrs) throw new SvcError('BAD_GATEWAY', `the SFTP server did not create the folder '${shown}'`);
      }
      if (attrs.isSymbolicLink()) throw new SvcError('BAD_REQUEST', `'${shown}' is a symlink; svc does not follow symlinks`);
      if (!attrs.isDirectory()) throw new SvcError('CONFLICT', `'${shown}' exists and is not a folder`);
    }
  }
}
