import type { Socket } from 'node:net';

/**
 * Line framing between the kernel and sandbox processes: one message per line,
 * `<header JSON>\t<body JSON>` where the body is passed through without re-parsing
 * (it goes straight into an isolate as text). Writes made in one tick leave in one write.
 *
 * The other end may be hostile (service code runs in sandbox processes): a line that is not
 * JSON, or a line longer than `maxLine`, is reported to `onViolation` and never thrown.
 */
const STATS = process.env.SVC_WIRE_STATS ? { flushes: 0, messages: 0 } : undefined;
if (STATS) setInterval(() => process.stderr.write(`wire ${process.pid}: ${STATS.messages} msgs / ${STATS.flushes} writes\n`), 2000).unref();

export interface WireHandlers {
  onMessage: (header: unknown, body: string) => void;
  onViolation: (why: string) => void;
  /** Longest line accepted, in UTF-16 code units. */
  maxLine: number;
}

export class Wire {
  private pending: string[] = [];
  private scheduled = false;
  private buffered = '';
  private broken = false;

  constructor(
    private readonly socket: Socket,
    private readonly handlers: WireHandlers,
  ) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.receive(chunk));
  }

  private receive(chunk: string): void {
    if (this.broken) return;
    const data = this.buffered + chunk;
    let start = 0;
    for (let nl = data.indexOf('\n'); nl !== -1; start = nl + 1, nl = data.indexOf('\n', start)) {
      const line = data.slice(start, nl);
      const tab = line.indexOf('\t');
      let header: unknown;
      try {
        header = JSON.parse(tab === -1 ? line : line.slice(0, tab));
      } catch {
        this.violate('a message header is not JSON');
        return;
      }
      this.handlers.onMessage(header, tab === -1 ? '' : line.slice(tab + 1));
      if (this.broken) return;
    }
    this.buffered = start === 0 ? data : data.slice(start);
    if (this.buffered.length > this.handlers.maxLine) this.violate(`a message exceeds ${this.handlers.maxLine} characters`);
  }

  private violate(why: string): void {
    this.broken = true;
    this.buffered = '';
    this.handlers.onViolation(why);
  }

  send(header: object, body?: string): void {
    this.sendRaw(body === undefined ? JSON.stringify(header) + '\n' : JSON.stringify(header) + '\t' + body + '\n');
  }

  /** A complete line, already framed. */
  sendRaw(line: string): void {
    this.pending.push(line);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (!this.pending.length || this.socket.destroyed) return;
    if (STATS) (STATS.flushes++, (STATS.messages += this.pending.length));
    const out = this.pending.length === 1 ? this.pending[0]! : this.pending.join('');
    this.pending = [];
    this.socket.write(out);
  };
}
