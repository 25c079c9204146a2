import { z } from 'zod';
import { definePlugin, type KernelApi } from '../../../../sdk/plugin/index.ts';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { SFTP, sftpKeys } from '../../../helpers/servers.ts';

/**
 * Runs the SDK calls of the payload in order and answers each one's value or the error it threw,
 * so a test reads what a service sees: `[op, connection, ...args]`. `{ $u8: [..] }` becomes a
 * Uint8Array, `{ $repeat: [text, n] }` the text n times (large content), and a Uint8Array answered comes back as `{ $u8: [..] }`.
 * An error says whether it is the SDK's PayloadTooLarge class (`tooLarge`).
 */
export const PROBE = `import { service, sftp, PayloadTooLarge } from 'svc/sdk';
const revive = (v) => v && typeof v === 'object' && '$u8' in v ? new Uint8Array(v.$u8) : v && typeof v === 'object' && '$repeat' in v ? v.$repeat[0].repeat(v.$repeat[1]) : v;
export default service({
  async POST(ctx) {
    const out = [];
    for (const [op, name, ...args] of ctx.payload.calls) {
      try {
        const value = await sftp(name)[op](...args.map(revive));
        out.push({ value: value instanceof Uint8Array ? { $u8: [...value] } : typeof value === 'string' && value.length > 100000 ? { length: value.length } : value ?? null });
      } catch (e) {
        out.push({ error: { name: e.name, kind: e.kind, status: e.status, code: e.code, message: String(e.message), tooLarge: e instanceof PayloadTooLarge } });
      }
    }
    return out;
  },
});
`;

export type Outcome = { value?: any; error?: { name: string; kind?: string; status?: number; code?: string; message: string; tooLarge: boolean } };

/** An sftp_connection entry to the test sshd as YAML flow, with overrides. */
export function entry(name: string, root: string, extra: Record<string, unknown> = {}): string {
  const fields: Record<string, unknown> = { name, host: SFTP.host, port: SFTP.port, username: SFTP.username, password: SFTP.password, host_key: sftpKeys().hostKey, root, ...extra };
  for (const [k, v] of Object.entries(fields)) if (v === undefined) delete fields[k];
  return `  - ${JSON.stringify(fields)}\n`;
}

/**
 * A TCP proxy to the test sshd that a test can cut: `cut()` destroys every connection through it
 * now; `cutAfter(bytes)` destroys a connection once that many bytes went from client to server.
 * (Killing sshd's session processes would also hit other suites using the same server.)
 */
export class CuttableProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private limit: number | undefined;
  /** While stalled, what the client sends is held back (an unresponsive server); resume() sends it. */
  private held: Array<() => void> | undefined;
  connections = 0;
  port = 0;

  constructor() {
    this.server = createServer((client) => {
      this.connections++;
      const upstream = connect({ host: SFTP.host, port: SFTP.port });
      let sent = 0;
      const limit = this.limit;
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.on('data', (chunk: Buffer) => {
        sent += chunk.length;
        if (limit !== undefined && sent > limit) {
          client.destroy();
          upstream.destroy();
          return;
        }
        if (this.held) this.held.push(() => upstream.write(chunk));
        else upstream.write(chunk);
      });
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }

  /** Listens on `port` (0: any free one). */
  async start(port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  /** Connections opened from now on are cut after `bytes` from the client (undefined: never). */
  cutAfter(bytes: number | undefined): void {
    this.limit = bytes;
  }

  stall(): void {
    this.held ??= [];
  }

  resume(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const send of held) send();
  }

  cut(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** A plugin that hands the test the KernelApi (to look up `connectors.sftp` and read connection reports). */
export function capturePlugin(take: (api: KernelApi) => void) {
  return definePlugin({ name: 'capture', kind: 'other', version: '1.0.0', sdk: '^1.9.0', configSchema: z.object({}).strict().default({}), setup: (kernel) => void take(kernel), hooks: {} });
}
