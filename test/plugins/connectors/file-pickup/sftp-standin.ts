import SftpClient from 'ssh2-sftp-client';
import { z } from 'zod';
import { definePlugin, SvcError } from '../../../../sdk/plugin/index.ts';
import type { FileFolder, FolderEntry } from '../../../../plugins/capabilities.ts';
import { checkRelative } from '../../../../plugins/connectors/file-pickup/local-folder.ts';
import { SFTP } from '../../../helpers/servers.ts';

/**
 * Stands in for plugins/connectors/sftp (written on another branch) until it is merged: the
 * `connectors.sftp` capability over ssh2-sftp-client against the real sshd of the test servers,
 * with an `sftp_connection` section of names only. It lets the file pickup's SFTP strategy be
 * tested against a real server now; once the sftp plugin is on main, these tests use it instead.
 * `sessions` are the open clients, so a test can cut one mid-read as a dropped connection.
 */
export const sessions = new Set<SftpClient>();

const mapError = (err: unknown, what: string): never => {
  const code = (err as { code?: number | string }).code;
  if (code === 2 || code === 'ENOENT') throw new SvcError('NOT_FOUND', `${what}: not found`);
  throw new SvcError('SERVICE_UNAVAILABLE', `${what}: ${(err as Error).message}`);
};

class StandInFolder implements FileFolder {
  constructor(
    private readonly client: SftpClient,
    private readonly root: string,
  ) {}
  get describe(): string {
    return `sftp://standin/${this.root}`;
  }
  private at(path: string): string {
    const rel = checkRelative(path);
    return rel ? `${this.root}/${rel}` : this.root;
  }
  async list(dir: string): Promise<FolderEntry[]> {
    const items = await this.client.list(this.at(dir)).catch((err) => mapError(err, dir));
    return items.map((i) => ({ name: i.name, type: i.type === 'd' ? 'dir' : i.type === 'l' ? 'symlink' : i.type === '-' ? 'file' : 'other', size: i.size, mtimeMs: i.modifyTime }));
  }
  async read(path: string, maxBytes: number): Promise<Buffer> {
    const st = await this.client.stat(this.at(path)).catch((err) => mapError(err, path));
    if (st.size > maxBytes) throw new SvcError('PAYLOAD_TOO_LARGE', `'${path}' has ${st.size} bytes, more than ${maxBytes}`);
    return (await this.client.get(this.at(path)).catch((err) => mapError(err, path))) as Buffer;
  }
  async rename(from: string, to: string): Promise<void> {
    await this.client.posixRename(this.at(from), this.at(to)).catch((err) => mapError(err, from));
  }
  async remove(path: string): Promise<void> {
    await this.client.delete(this.at(path)).catch((err) => mapError(err, path));
  }
  async mkdir(path: string): Promise<void> {
    if (!(await this.client.exists(this.at(path)))) await this.client.mkdir(this.at(path), true).catch((err) => mapError(err, path));
  }
  async exists(path: string): Promise<boolean> {
    return (await this.client.exists(this.at(path))) !== false;
  }
  async release(): Promise<void> {
    sessions.delete(this.client);
    await this.client.end().catch(() => {});
  }
}

export const sftpStandIn = definePlugin({
  name: 'sftp-standin',
  kind: 'other',
  version: '0.0.0',
  sdk: '^1.9.0',
  configSchema: z.object({}).strict().default({}),
  contributes: { sections: { sftp_connection: z.array(z.object({ name: z.string() }).strict()).default([]).describe('Test stand-in.') } },
  setup(kernel) {
    kernel.provide('connectors.sftp', {
      has: () => true,
      async open(_connection: string, root: string) {
        const client = new SftpClient();
        try {
          await client.connect({ host: SFTP.host, port: SFTP.port, username: SFTP.username, password: SFTP.password, readyTimeout: 5000 });
        } catch (err) {
          throw new SvcError('SERVICE_UNAVAILABLE', `sftp: ${(err as Error).message}`);
        }
        sessions.add(client);
        return new StandInFolder(client, root);
      },
    });
  },
  hooks: {},
});
