import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the upstream saw of one request. */
export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string, hit: number) => void;

/**
 * A real HTTP server on loopback standing in for the external system. Each route counts its hits
 * and records what it received; `aborted` lists routes whose client went away mid-request.
 */
export class Upstream {
  readonly seen = new Map<string, Seen[]>();
  readonly aborted: string[] = [];
  private readonly routes = new Map<string, Handler>();
  private server: Server | undefined;
  port = 0;

  route(prefix: string, handler: Handler): this {
    this.routes.set(prefix, handler);
    return this;
  }

  hits(prefix: string): Seen[] {
    return this.seen.get(prefix) ?? [];
  }

  reset(): void {
    this.seen.clear();
    this.aborted.length = 0;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const prefix = [...this.routes.keys()].find((p) => req.url!.startsWith(p));
        if (prefix === undefined) {
          res.writeHead(404).end();
          return;
        }
        const list = this.seen.get(prefix) ?? [];
        this.seen.set(prefix, list);
        const body = Buffer.concat(chunks).toString('utf8');
        list.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        res.on('close', () => {
          if (!res.writableFinished) this.aborted.push(prefix);
        });
        this.routes.get(prefix)!(req, res, body, list.length);
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}
