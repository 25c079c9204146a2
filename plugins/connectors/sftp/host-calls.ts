import { z } from 'zod';
import { SvcError, type HostCall, type HostCallContext, type KernelApi } from '../../../sdk/plugin/index.ts';
import type { SftpConnection } from './connection.ts';
import { PartLeft, RootedFolder } from './folder.ts';
import { connectionForService } from '../shared/access.ts';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Paths are checked as text by the folder (paths.ts); here only their shape and size. */
const path = z.string().max(4096);
const connection = z.string().min(1).max(200);
/** Content up to 1 GiB (the highest max_file_bytes) as base64, or as text; the connection's cap is checked on the bytes. */
const MAX_CONTENT_CHARS = Math.ceil((1024 * 1024 * 1024 * 4) / 3) + 4;

export const putArgs = z
  .object({
    connection,
    path,
    content: z.string().max(MAX_CONTENT_CHARS),
    encoding: z.enum(['utf8', 'base64']),
    mode: z.number().int().min(0).max(0o7777).optional(),
    overwrite: z.boolean().default(true),
    atomic: z.boolean().default(true),
  })
  .strict()
  .refine((a) => a.encoding !== 'base64' || BASE64.test(a.content), { path: ['content'], message: 'must be base64' });
export const getArgs = z.object({ connection, path, encoding: z.enum(['utf8', 'base64']).default('utf8') }).strict();
export const pathArgs = z.object({ connection, path }).strict();
export const renameArgs = z.object({ connection, from: path, to: path, overwrite: z.boolean().default(false) }).strict();
export type PutArgs = z.infer<typeof putArgs>;

/** What `sftp(name).stat` and `list` answer a service. */
function entryOf(e: { name: string; type: string; size: number; mtimeMs: number }) {
  return { name: e.name, type: e.type, size: e.size, modifiedAt: new Date(e.mtimeMs).toISOString() };
}

/**
 * `sftp.*`: file operations on a connection of config, by name, under its root. An unknown name
 * is NotFound, a service the connection does not allow Forbidden (both logged at warn).
 */
export function sftpHostCalls(connectionOf: (name: string) => SftpConnection | undefined, kernel: KernelApi): HostCall[] {
  const open = (name: string, ctx: HostCallContext): SftpConnection => connectionForService('SFTP', name, connectionOf, (c) => c.entry.allowed_services, ctx);
  const on = <T>(op: string, name: string, ctx: HostCallContext, work: (folder: RootedFolder, conn: SftpConnection) => Promise<T>) => {
    const conn = open(name, ctx);
    return conn.run(op, (session) => work(new RootedFolder(session, conn.entry.root), conn), ctx.timeLeftMs());
  };

  const put = async (a: PutArgs, ctx: HostCallContext) => {
    const conn = open(a.connection, ctx);
    const content = Buffer.from(a.content, a.encoding);
    if (content.length > conn.entry.max_file_bytes) throw new SvcError('PAYLOAD_TOO_LARGE', `${content.length} bytes for '${a.path.slice(0, 200)}' is over the limit of ${conn.entry.max_file_bytes} (max_file_bytes of '${a.connection}')`);
    let left: string | undefined;
    try {
      await conn.run(
        'put',
        (session) =>
          new RootedFolder(session, conn.entry.root).write(a.path, content, a).catch((err) => {
            if (!(err instanceof PartLeft)) throw err;
            left = err.part;
            throw err.cause;
          }),
        ctx.timeLeftMs(),
      );
    } catch (err) {
      // The connection dropped mid-transfer: the target is untouched; the part is removed on a new session.
      if (left !== undefined) void removePart(conn, left, kernel);
      throw err;
    }
    return null;
  };

  const call = <A>(op: string, args: z.ZodType<A>, handler: (a: A, ctx: HostCallContext) => Promise<unknown>): HostCall => ({ op, args, handler, quota: 'outgoing_calls_per_minute' }) as HostCall<A> as HostCall;
  return [
    call('sftp.put', putArgs, put),
    call('sftp.get', getArgs, async (a, ctx) => ({ content: (await on('get', a.connection, ctx, (f, c) => f.read(a.path, c.entry.max_file_bytes))).toString(a.encoding) })),
    call('sftp.list', pathArgs, async (a, ctx) => (await on('list', a.connection, ctx, (f) => f.list(a.path))).map(entryOf)),
    call('sftp.stat', pathArgs, async (a, ctx) => entryOf(await on('stat', a.connection, ctx, (f) => f.stat(a.path)))),
    call('sftp.rename', renameArgs, (a, ctx) => on('rename', a.connection, ctx, (f) => f.rename(a.from, a.to, { replace: a.overwrite }))),
    call('sftp.delete', pathArgs, (a, ctx) => on('delete', a.connection, ctx, (f) => f.remove(a.path))),
    call('sftp.mkdir', pathArgs, (a, ctx) => on('mkdir', a.connection, ctx, (f) => f.mkdir(a.path))),
  ];
}

async function removePart(conn: SftpConnection, part: string, kernel: KernelApi): Promise<void> {
  try {
    await conn.run('cleanup', (session) => session.unlink(part));
  } catch (err) {
    kernel.log.warn({ plugin: 'sftp', connection: conn.entry.name, part, err: (err as Error).message }, 'the temporary file of a failed put could not be removed');
  }
}
