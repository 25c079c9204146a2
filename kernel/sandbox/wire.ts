import type { Socket } from 'node:net';

/**
 * Line framing between the kernel and sandbox processes: one message per line,
 * `<header JSON>\t<body JSON>` where the body is passed through without re-parsing
 * (it goes straight into an isolate as text). A message may carry a raw part, any text, sent
 * before its line as `#<length>\n<text>`: text that would otherwise be escaped into the body's JSON
 * and unescaped again (a request's body). Writes made in one tick leave in one write.
 *
 * The other end may be hostile (service code runs in sandbox processes): a line that is not
 * JSON, or a line longer than `maxLine`, is reported to `onViolation` and never thrown.
 */
const STATS = process.env.SVC_WIRE_STATS ? { flushes: 0, messages: 0 } : undefined;
if (STATS) setInterval(() => process.stderr.write(`wire ${process.pid}: ${STATS.messages} msgs / ${STATS.flushes} writes\n`), 2000).unref();

export interface WireHandlers {
  /** `raw`: the message's raw part, when it had one. */
  onMessage: (header: unknown, body: string, raw: string | undefined) => void;
  onViolation: (why: string) => void;
  /** Longest line accepted, in UTF-16 code units. */
  maxLine: number;
}

export class Wire {
  private pending: string[] = [];
  private scheduled = false;
  private buffered = '';
  private broken = false;
  /** Length of a raw part announced and not yet read. */
  private rawLength = -1;
  /** A raw part read, waiting for its message's line. */
  private raw: string | undefined;

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
    for (;;) {
      if (this.rawLength >= 0) {
        if (data.length - start < this.rawLength) break;
        this.raw = data.slice(start, start + this.rawLength);
        start += this.rawLength;
        this.rawLength = -1;
      }
      const nl = data.indexOf('\n', start);
      if (nl === -1) break;
      const line = data.slice(start, nl);
      start = nl + 1;
      if (line.charCodeAt(0) === 35 /* # */) {
        const length = /^#\d{1,10}$/.test(line) ? Number(line.slice(1)) : -1;
        if (this.raw !== undefined || length < 0 || length > this.handlers.maxLine) return this.violate('a malformed raw part');
        this.rawLength = length;
        continue;
      }
      const tab = line.indexOf('\t');
      let header: unknown;
      try {
        header = JSON.parse(tab === -1 ? line : line.slice(0, tab));
      } catch {
        this.violate('a message header is not JSON');
        return;
      }
      const raw = this.raw;
      this.raw = undefined;
      this.handlers.onMessage(header, tab === -1 ? '' : line.slice(tab + 1), raw);
      if (this.broken) return;
    }
    this.buffered = start === 0 ? data : data.slice(start);
    // A raw part being read may be as long as a line; a line longer than the cap is refused.
    if (this.buffered.length > this.handlers.maxLine) this.violate(`a message exceeds ${this.handlers.maxLine} characters`);
  }

  private violate(why: string): void {
    this.broken = true;
    this.buffered = '';
    this.raw = undefined;
    this.handlers.onViolation(why);
  }

  /** `raw`: any text, delivered as it is beside the message (see above). */
  send(header: object, body?: string, raw?: string): void {
    const line = body === undefined ? JSON.stringify(header) + '\n' : JSON.stringify(header) + '\t' + body + '\n';
    this.sendRaw(raw === undefined ? line : '#' + raw.length + '\n' + raw + line);
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
