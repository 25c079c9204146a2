import { constants, promises as fs } from 'node:fs';
import { join, sep } from 'node:path';
import { SvcError } from '../../../sdk/plugin/index.ts';
import type { FileFolder, FolderEntry } from '../../capabilities.ts';

/**
 * A local folder as a FileFolder (the SFTP plugin gives the other kind). Every path is checked
 * to stay under the root before it reaches the file system, and no symlink is followed: entries
 * are read with lstat, files opened with O_NOFOLLOW, and a path whose parent folders include a
 * symlink out of the root is refused (realpath), so nothing outside the folder is read or written.
 */

/** A relative `/`-separated path that stays under the root: no `..`, no absolute path, no NUL or control characters. */
export function checkRelative(path: string): string {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  if (path.startsWith('/') || path.includes('\\') || /[\u0000-\u001f\u007f]/.test(path) || parts.some((p) => p === '..')) {
    throw new SvcError('BAD_REQUEST', `path '${printable(path)}' would leave the folder`);
  }
  return parts.join('/');
}

/** A name as logs show it: control characters escaped. */
export function printable(name: string): string {
  return name.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`).slice(0, 300);
}

function typeOf(st: import('node:fs').Stats): FolderEntry['type'] {
  return st.isSymbolicLink() ? 'symlink' : st.isFile() ? 'file' : st.isDirectory() ? 'dir' : 'other';
}

function mapError(err: unknown, what: string): never {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') throw new SvcError('NOT_FOUND', `${what}: not found`);
  if (code === 'ELOOP') throw new SvcError('BAD_REQUEST', `${what}: a symlink, not followed`);
  if (err instanceof SvcError) throw err;
  throw new SvcError('SERVICE_UNAVAILABLE', `${what}: ${code ?? (err as Error).message}`);
}

export class LocalFolder implements FileFolder {
  readonly describe: string;
  private readonly root: string;

  constructor(root: string) {
    this.describe = root;
    this.root = root;
  }

  /** The absolute path of a relative one, refused when a symlink on its way leads out of the root. */
  private async resolve(path: string): Promise<string> {
    const rel = checkRelative(path);
    const parts = rel === '' ? [] : rel.split('/');
    const full = join(this.root, ...parts);
    // A name right under the root has no folder on its way: the name itself is lstat-ed, opened with O_NOFOLLOW or renamed as a link.
    if (parts.length < 2) return full;
    // Deeper: the folders on the way must resolve to real folders under the root.
    let rootReal: string;
    let parentReal: string;
    try {
      rootReal = await fs.realpath(this.root);
      parentReal = await fs.realpath(join(this.root, ...parts.slice(0, -1)));
    } catch (err) {
      return mapError(err, `'${printable(rel)}'`);
    }
    if (parentReal !== rootReal && !parentReal.startsWith(rootReal + sep)) throw new SvcError('BAD_REQUEST', `'${printable(rel)}' is under a symlink out of the folder`);
    return full;
  }

  async list(dir: string): Promise<FolderEntry[]> {
    const full = await this.resolve(dir);
    if (dir !== '' && (await fs.lstat(full).catch((err) => mapError(err, dir))).isSymbolicLink()) throw new SvcError('BAD_REQUEST', `'${printable(dir)}' is a symlink, not followed`);
    const names = await fs.readdir(full).catch((err) => mapError(err, `'${printable(dir)}'`));
    const out: FolderEntry[] = [];
    for (const name of names) {
      const st = await fs.lstat(join(full, name)).catch(() => undefined);
      // Gone between readdir and lstat: it was moved or removed meanwhile.
      if (st) out.push({ name, type: typeOf(st), size: st.size, mtimeMs: Math.floor(st.mtimeMs) });
    }
    return out;
  }

  async read(path: string, maxBytes: number): Promise<Buffer> {
    const full = await this.resolve(path);
    const handle = await fs.open(full, constants.O_RDONLY | constants.O_NOFOLLOW).catch((err) => mapError(err, `'${printable(path)}'`));
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new SvcError('BAD_REQUEST', `'${printable(path)}' is not a file`);
      if (st.size > maxBytes) throw new SvcError('PAYLOAD_TOO_LARGE', `'${printable(path)}' has ${st.size} bytes, more than ${maxBytes}`);
      // Read at most one byte past the limit: a file that grew since stat is caught without reading it all.
      const buf = Buffer.alloc(Math.min(st.size, maxBytes) + 1);
      let got = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buf, got, buf.length - got, got);
        if (bytesRead === 0) break;
        got += bytesRead;
        if (got === buf.length) break;
      }
      if (got > maxBytes) throw new SvcError('PAYLOAD_TOO_LARGE', `'${printable(path)}' has more than ${maxBytes} bytes`);
      return buf.subarray(0, got);
    } finally {
      await handle.close();
    }
  }

  async rename(from: string, to: string): Promise<void> {
    const [a, b] = [await this.resolve(from), await this.resolve(to)];
    await fs.rename(a, b).catch((err) => mapError(err, `moving '${printable(from)}'`));
  }

  async remove(path: string): Promise<void> {
    await fs.unlink(await this.resolve(path)).catch((err) => mapError(err, `removing '${printable(path)}'`));
  }

  async mkdir(path: string): Promise<void> {
    const rel = checkRelative(path);
    // Made one level at a time, each checked: mkdir -p would follow a symlink on the way.
    let at = '';
    for (const part of rel.split('/').filter(Boolean)) {
      at = at ? `${at}/${part}` : part;
      const full = await this.resolve(at);
      const st = await fs.lstat(full).catch(() => undefined);
      if (st?.isDirectory()) continue;
      if (st) throw new SvcError('BAD_REQUEST', `'${printable(at)}' exists and is not a folder`);
      await fs.mkdir(full).catch((err) => ((err as NodeJS.ErrnoException).code === 'EEXIST' ? undefined : mapError(err, `creating '${printable(at)}'`)));
    }
  }

  async exists(path: string): Promise<boolean> {
    const full = await this.resolve(path).catch(() => undefined);
    return full !== undefined && (await fs.lstat(full).then(() => true, () => false));
  }

  async release(): Promise<void> {}
}
