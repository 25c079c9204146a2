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
 *
 * One read may hold hundreds of messages (a service making 256 outgoing calls at once sends
 * them in one write), and handling them all in one turn of the event loop stalled every other
 * tenant's request for up to 20 ms. So a read is handled for at most TURN_BUDGET_MS: the rest
 * waits for the next turn (setImmediate), with the socket paused meanwhile, after the other
 * sockets' events of this turn have run.
 */
const STATS = process.env.SVC_WIRE_STATS ? { flushes: 0, messages: 0 } : undefined;
if (STATS) setInterval(() => process.stderr.write(`wire ${process.pid}: ${STATS.messages} msgs / ${STATS.flushes} writes\n`), 2000).unref();

/** How long one turn of the event loop handles one wire's messages before it yields (see above). */
export const TURN_BUDGET_MS = 1;

const OPEN = '{"t":"';
const ID = '","id":';
const SVC = ',"svc":"';

/**
 * The header of almost every message, `{"t":"<kind>","id":<n>}` or `{"t":"<kind>","id":<n>,"svc":"<name>"}`
 * (a call's), read without JSON.parse, which cost several times more per message; undefined for
 * anything else, which then goes through JSON.parse. Only text JSON.parse would read the same
 * way is accepted: a lower-case kind, decimal digits, a name without quotes, backslashes or
 * control characters.
 */
export function quickHeader(line: string, end: number): { t: string; id: number; svc?: string } | undefined {
  if (!line.startsWith(OPEN)) return undefined;
  let i = OPEN.length;
  while (i < end && line.charCodeAt(i) >= 97 && line.charCodeAt(i) <= 122) i++;
  if (i === OPEN.length || !line.startsWith(ID, i)) return undefined;
  const t = line.slice(OPEN.length, i);
  i += ID.length;
  const digits = i;
  while (i < end && line.charCodeAt(i) >= 48 && line.charCodeAt(i) <= 57) i++;
  // A leading zero is not JSON; more than 15 digits may not be a safe integer.
  if (i === digits || i - digits > 15 || (line.charCodeAt(digits) === 48 && i - digits > 1)) return undefined;
  const id = Number(line.slice(digits, i));
  if (i === end - 1 && line.charCodeAt(i) === 125 /* } */) return { t, id };
  if (!line.startsWith(SVC, i) || line.charCodeAt(end - 1) !== 125 || line.charCodeAt(end - 2) !== 34 /* " */) return undefined;
  const from = i + SVC.length;
  const to = end - 2;
  if (to <= from) return undefined;
  for (let k = from; k < to; k++) {
    const c = line.charCodeAt(k);
    if (c === 34 || c === 92 || c < 32) return undefined;
  }
  return { t, id, svc: line.slice(from, to) };
}

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
  /** The rest of a read waits for the next turn, the socket paused (see TURN_BUDGET_MS). */
  private yielded = false;

  private socket: Socket | undefined;

  /** Without a socket, what is sent waits until `attach` gives one (a sandbox process's pipe comes from the spawner). */
  constructor(
    socket: Socket | undefined,
    private readonly handlers: WireHandlers,
  ) {
    if (socket) this.attach(socket);
  }

  attach(socket: Socket): void {
    this.socket = socket;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.receive(chunk));
    if (this.pending.length && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private receive(chunk: string): void {
    if (this.broken) return;
    if (this.yielded) {
      // Read before the pause took hold: it follows what waits.
      this.buffered += chunk;
      return;
    }
    const data = this.buffered + chunk;
    const began = performance.now();
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
      let header: unknown = quickHeader(line, tab === -1 ? line.length : tab);
      if (header === undefined) {
        try {
          header = JSON.parse(tab === -1 ? line : line.slice(0, tab));
        } catch {
          this.violate('a message header is not JSON');
          return;
        }
      }
      const raw = this.raw;
      this.raw = undefined;
      this.handlers.onMessage(header, tab === -1 ? '' : line.slice(tab + 1), raw);
      if (this.broken) return;
      if (performance.now() - began >= TURN_BUDGET_MS && data.indexOf('\n', start) !== -1) {
        this.buffered = data.slice(start);
        this.yieldTurn();
        return;
      }
    }
    this.buffered = start === 0 ? data : data.slice(start);
    // A raw part being read may be as long as a line; a line longer than the cap is refused.
    if (this.buffered.length > this.handlers.maxLine) this.violate(`a message exceeds ${this.handlers.maxLine} characters`);
  }

  /** Stops reading until the next turn; what is buffered is handled then, before anything read after it. */
  private yieldTurn(): void {
    if (this.yielded) return;
    this.yielded = true;
    this.socket?.pause();
    setImmediate(this.resumeTurn);
  }

  private readonly resumeTurn = (): void => {
    this.yielded = false;
    this.receive('');
    if (!this.yielded && !this.broken) this.socket?.resume();
  };

  private violate(why: string): void {
    this.broken = true;
    this.buffered = '';
    this.raw = undefined;
    this.handlers.onViolation(why);
  }

  /** `raw`: any text, delivered as it is beside the message (see above). */
  send(header: object, body?: string, raw?: string): void {
    this.sendHeaderJson(JSON.stringify(header), body, raw);
  }

  /** The same, with the header already JSON text (a call's, written without JSON.stringify). */
  sendHeaderJson(header: string, body?: string, raw?: string): void {
    const line = body === undefined ? header + '\n' : header + '\t' + body + '\n';
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
    if (!this.pending.length || !this.socket || this.socket.destroyed) return;
    if (STATS) (STATS.flushes++, (STATS.messages += this.pending.length));
    const out = this.pending.length === 1 ? this.pending[0]! : this.pending.join('');
    this.pending = [];
    this.socket.write(out);
  };
}

/**
 * The longest line the kernel takes from a sandbox process: a result is at most the output cap
 * as JSON text (escaping can double it), plus headers and logs. A longer one breaks the protocol
 * and the process is stopped, so the sandbox side keeps what it sends below it.
 */
export function wireLineLimit(caps: { maxOutputBytes: number }): number {
  return caps.maxOutputBytes * 2 + (8 << 20);
}

/** The largest host call's arguments (JSON text) a service may send: the line limit less room for the header. */
export function hostCallArgsLimit(caps: { maxOutputBytes: number }): number {
  return wireLineLimit(caps) - (1 << 20);
}
