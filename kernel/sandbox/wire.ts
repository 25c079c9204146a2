import type { Socket } from 'node:net';

/**
 * Line framing between the kernel and sandbox processes: one message per line,
 * `<header JSON>\t<body JSON>` where the body is passed through without re-parsing
 * (it goes straight into an isolate as text). Messages sent in one tick are encoded into one
 * buffer and leave in one write: joining their strings and encoding the result cost more, and the
 * strings, kept until the flush, lived through young-generation collections.
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

/** Outgoing bytes are gathered here between flushes; a flush that needs more grows it (and it stays grown). */
const OUT_INITIAL_BYTES = 64 * 1024;
/** A message that may be larger than this goes straight to the socket instead. */
const LARGE_BYTES = 32 * 1024;

export class Wire {
  private out = Buffer.allocUnsafe(OUT_INITIAL_BYTES);
  private used = 0;
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
    if (body === undefined) this.sendParts(JSON.stringify(header), undefined);
    else this.sendParts(JSON.stringify(header), body);
  }

  /** A message whose header is JSON text already: `header` and `body` are written with the framing between them. */
  sendParts(header: string, body: string | undefined): void {
    if (STATS) STATS.messages++;
    // Worst case 3 bytes per UTF-16 unit, plus the tab and the newline.
    const most = (header.length + (body === undefined ? 0 : body.length)) * 3 + 2;
    if (most > LARGE_BYTES) {
      // A deploy's code or a large result: written as it is, after what is pending, so the buffer stays small.
      this.flush();
      if (!this.socket.destroyed) this.socket.write(body === undefined ? header + '\n' : header + '\t' + body + '\n');
      return;
    }
    this.reserve(most);
    this.used += this.out.write(header, this.used, 'utf8');
    if (body !== undefined) {
      this.out[this.used++] = 0x09;
      this.used += this.out.write(body, this.used, 'utf8');
    }
    this.out[this.used++] = 0x0a;
    this.schedule();
  }

  private reserve(bytes: number): void {
    if (this.used + bytes <= this.out.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.used + bytes));
    this.out.copy(grown, 0, 0, this.used);
    this.out = grown;
  }

  private schedule(): void {
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (!this.used || this.socket.destroyed) {
      this.used = 0;
      return;
    }
    if (STATS) STATS.flushes++;
    // The socket keeps what it is given until it is written: it gets a copy, and the buffer is reused.
    const bytes = Buffer.from(this.out.subarray(0, this.used));
    this.used = 0;
    this.socket.write(bytes);
  };
}
