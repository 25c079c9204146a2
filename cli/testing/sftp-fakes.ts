import type { z } from 'zod';
import { SvcError } from '../../kernel/errors.ts';
import type { getArgs, pathArgs, putArgs, renameArgs } from '../../plugins/connectors/sftp/host-calls.ts';
import { segmentsOf } from '../../plugins/connectors/sftp/paths.ts';
import type { FakeSftpConnection } from '../../sdk/testing/index.ts';

/**
 * An in-memory folder for `sftp(name)` under `svc test`: files by path, folders implied by them
 * or made by mkdir. Paths are checked by the production rules (paths.ts), so a test sees the same
 * BadRequest for `../x`; answers have the host calls' shapes.
 */
export class FakeSftpFolder {
  readonly files = new Map<string, Buffer>();
  private readonly dirs = new Set<string>();
  private readonly modified = new Map<string, number>();
  private readonly maxBytes: number;

  constructor(fake: FakeSftpConnection) {
    this.maxBytes = fake.maxFileBytes ?? 64 * 1024 * 1024;
    for (const [path, content] of Object.entries(fake.files ?? {})) this.store(this.file(path), typeof content === 'string' ? Buffer.from(content) : Buffer.from(content));
  }

  private file(path: string): string {
    return segmentsOf(path, 'path', { root: 'refused' }).join('/');
  }

  private store(path: string, content: Buffer): void {
    this.files.set(path, content);
    this.modified.set(path, Date.now());
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) this.dirs.add(parts.slice(0, i).join('/'));
  }

  put(a: z.infer<typeof putArgs>): unknown {
    const path = this.file(a.path);
    const content = Buffer.from(a.content, a.encoding);
    if (content.length > this.maxBytes) throw new SvcError('PAYLOAD_TOO_LARGE', `${content.length} bytes for '${a.path}' is over the limit of ${this.maxBytes}`);
    if (this.dirs.has(path)) throw new SvcError('BAD_REQUEST', `'${a.path}' is a folder`);
    if (this.files.has(path) && a.overwrite === false) throw new SvcError('CONFLICT', `'${a.path}' exists (overwrite: false)`);
    const parent = path.split('/').slice(0, -1).join('/');
    if (parent && !this.dirs.has(parent)) throw new SvcError('NOT_FOUND', `no folder '${parent}' (in ${a.path})`);
    this.store(path, content);
    return null;
  }

  get(a: z.infer<typeof getArgs>): unknown {
    const content = this.files.get(this.file(a.path));
    if (!content) throw new SvcError('NOT_FOUND', `no file '${a.path}'`);
    if (content.length > this.maxBytes) throw new SvcError('PAYLOAD_TOO_LARGE', `'${a.path}' is ${content.length} bytes, over the limit of ${this.maxBytes}`);
    return { content: content.toString(a.encoding) };
  }

  private entry(name: string, path: string) {
    const file = this.files.get(path);
    return { name, type: file ? 'file' : 'dir', size: file?.length ?? 0, modifiedAt: new Date(this.modified.get(path) ?? Date.now()).toISOString() };
  }

  list(a: z.infer<typeof pathArgs>): unknown {
    const dir = segmentsOf(a.path, 'folder', { root: 'allowed' }).join('/');
    if (dir && !this.dirs.has(dir)) throw new SvcError('NOT_FOUND', `no folder '${a.path}'`);
    const prefix = dir ? `${dir}/` : '';
    const names = new Set<string>();
    for (const p of [...this.files.keys(), ...this.dirs]) if (p.startsWith(prefix) && p.length > prefix.length && !p.slice(prefix.length).includes('/')) names.add(p);
    return [...names].sort().map((p) => this.entry(p.slice(prefix.length), p));
  }

  stat(a: z.infer<typeof pathArgs>): unknown {
    const path = this.file(a.path);
    if (!this.files.has(path) && !this.dirs.has(path)) throw new SvcError('NOT_FOUND', `no file '${a.path}'`);
    return this.entry(path.split('/').at(-1)!, path);
  }

  rename(a: z.infer<typeof renameArgs>): null {
    const from = this.file(a.from);
    const to = this.file(a.to);
    const content = this.files.get(from);
    if (!content) throw new SvcError('NOT_FOUND', `no file '${a.from}'`);
    if (this.files.has(to) && !a.overwrite) throw new SvcError('CONFLICT', `'${a.to}' exists`);
    this.files.delete(from);
    this.store(to, content);
    return null;
  }

  delete(a: z.infer<typeof pathArgs>): null {
    const path = this.file(a.path);
    if (this.files.delete(path)) return null;
    if (!this.dirs.has(path)) throw new SvcError('NOT_FOUND', `no file '${a.path}'`);
    if ([...this.files.keys(), ...this.dirs].some((p) => p.startsWith(`${path}/`))) throw new SvcError('CONFLICT', `folder '${a.path}' is not empty`);
    this.dirs.delete(path);
    return null;
  }

  mkdir(a: z.infer<typeof pathArgs>): null {
    const parts = this.file(a.path).split('/');
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      if (this.files.has(p)) throw new SvcError('CONFLICT', `'${p}' exists and is not a folder`);
      this.dirs.add(p);
    }
    return null;
  }
}
