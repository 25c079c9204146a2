import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One token request as the auth server received it. */
export interface TokenCall {
  headers: IncomingHttpHeaders;
  /** Parsed by its content type: form fields or the JSON document. */
  body: Record<string, unknown>;
}

export interface TokenReply {
  status?: number;
  /** An object is sent as JSON; a string as it is. */
  body: Record<string, unknown> | string;
}

/**
 * A real OAuth token endpoint on loopback. It records every request and answers with `reply`
 * (by default token `tok-<n>`, valid 3600 s). While `held` is set, answers wait for `release()`.
 */
export class TokenServer {
  readonly calls: TokenCall[] = [];
  /** Requests whose connection closed before they were answered (the client gave up). */
  abandoned = 0;
  reply: (call: TokenCall, n: number) => TokenReply | 'hang' = (_call, n) => ({ body: { access_token: `tok-${n}`, token_type: 'Bearer', expires_in: 3600 } });
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<TokenServer> {
    let self: TokenServer | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => void self!.answer(req.headers, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    self = new TokenServer(server, `http://127.0.0.1:${port}/oauth/token`);
    return self;
  }

  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }

  release(): void {
    this.open?.();
    this.gate = undefined;
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async answer(headers: IncomingHttpHeaders, text: string, res: import('node:http').ServerResponse): Promise<void> {
    const json = (headers['content-type'] ?? '').startsWith('application/json');
    const body = json ? (JSON.parse(text) as Record<string, unknown>) : Object.fromEntries(new URLSearchParams(text));
    const call: TokenCall = { headers, body };
    this.calls.push(call);
    res.on('close', () => {
      if (!res.writableEnded) this.abandoned += 1;
    });
    const reply = this.reply(call, this.calls.length);
    await this.gate;
    if (reply === 'hang') return;
    const payload = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    res.writeHead(reply.status ?? 200, { 'content-type': typeof reply.body === 'string' ? 'text/plain' : 'application/json' });
    res.end(payload);
  }
}
