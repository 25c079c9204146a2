import { createServer, request, type Server } from 'node:http';
import { chmodSync, existsSync, rmSync } from 'node:fs';
import type { Logger } from 'pino';

/** Control requests carry a secret hash or a few names: anything larger is not one. */
const MAX_CONTROL_BODY = 1 << 20;

export type ControlReply = { ok: boolean; value?: unknown; error?: string };

/**
 * The running server's local control socket (`<data_dir>/control.sock`, mode 0600): CLI
 * commands reach the server here to act at once (rotate a secret, clear counters).
 */
export class ControlServer {
  private readonly server: Server;

  constructor(
    private readonly path: string,
    run: (op: string, args: unknown) => Promise<unknown>,
    log: Logger,
  ) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      // A client that goes away mid-request must not become an uncaught stream error.
      req.on('error', () => res.destroy());
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_CONTROL_BODY) req.destroy();
        else chunks.push(c);
      });
      req.on('end', () => {
        let op = '';
        let reply: Promise<ControlReply>;
        try {
          op = decodeURIComponent((req.url ?? '/').slice(1));
          const args = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
          reply = run(op, args).then(
            (value) => ({ ok: true, value }),
            (err: Error) => ({ ok: false, error: err.message }),
          );
        } catch {
          reply = Promise.resolve({ ok: false, error: 'the operation name or its arguments cannot be read' });
        }
        void reply.then((r) => {
          if (!r.ok) log.warn({ op, error: r.error }, 'control op failed');
          else log.info({ op }, 'control op done');
          res.writeHead(r.ok ? 200 : 400, { 'content-type': 'application/json' }).end(JSON.stringify(r));
        });
      });
    });
  }

  async listen(): Promise<void> {
    if (existsSync(this.path)) rmSync(this.path, { force: true });
    await new Promise<void>((resolve, reject) => this.server.once('error', reject).listen(this.path, () => resolve()));
    chmodSync(this.path, 0o600);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    if (existsSync(this.path)) rmSync(this.path, { force: true });
  }
}

/** Sends a control op; undefined when no server listens on that socket. */
export function sendControl(path: string, op: string, args: unknown): Promise<ControlReply | undefined> {
  return new Promise((resolve) => {
    if (!existsSync(path)) return resolve(undefined);
    const req = request({ socketPath: path, path: '/' + encodeURIComponent(op), method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ControlReply);
        } catch {
          resolve({ ok: false, error: 'unreadable reply from the server' });
        }
      });
    });
    req.on('error', () => resolve(undefined));
    req.end(JSON.stringify(args ?? {}));
  });
}
