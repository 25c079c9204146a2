import type { Socket } from 'node:net';

/**
 * Line framing between the kernel and sandbox processes: one message per line,
 * `<header JSON>\t<body JSON>` where the body is passed through without re-parsing
 * (it goes straight into an isolate as text). Writes made in one tick leave in one write.
 */
const STATS = process.env.SVC_WIRE_STATS ? { flushes: 0, messages: 0 } : undefined;
if (STATS) setInterval(() => process.stderr.write(`wire ${process.pid}: ${STATS.messages} msgs / ${STATS.flushes} writes\n`), 2000).unref();

export class Wire {
  private pending: string[] = [];
  private scheduled = false;
  private buffered = '';

  constructor(
    private readonly socket: Socket,
    onMessage: (header: Record<string, unknown>, body: string) => void,
  ) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      let data = this.buffered + chunk;
      let nl = data.indexOf('\n');
      let start = 0;
      while (nl !== -1) {
        const line = data.slice(start, nl);
        const tab = line.indexOf('\t');
        const header = JSON.parse(tab === -1 ? line : line.slice(0, tab)) as Record<string, unknown>;
        onMessage(header, tab === -1 ? '' : line.slice(tab + 1));
        start = nl + 1;
        nl = data.indexOf('\n', start);
      }
      this.buffered = start === 0 ? data : data.slice(start);
      data = '';
    });
  }

  send(header: Record<string, unknown>, body?: string): void {
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
