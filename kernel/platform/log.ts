import { writeSync } from 'node:fs';
import { hostname } from 'node:os';
import pino, { type DestinationStream, type Logger } from 'pino';

/** Writes one access-log line: the request's CID, channel, method, URL, status and milliseconds. */
export type AccessLog = (cid: string, channel: string | undefined, method: string, url: string, status: number, ms: number) => void;

export interface Loggers {
  log: Logger;
  /** Undefined when the level leaves out info lines. */
  access: AccessLog | undefined;
}

/**
 * Log lines leave stdout in batches: one write per FLUSH_MS (sooner past FLUSH_BYTES), where
 * pino's own stdout destination made one write(2) per line, which at the default level (one
 * access line per request) was the costliest step of a request. A batch is held in a buffer, not
 * as the joined strings of its lines: hundreds of small strings kept for 25 ms lived through
 * young-generation collections and were copied by each.
 *
 * The write is synchronous, as pino's default destination is: one write(2) per batch costs the
 * event loop little, a full pipe holds the server back instead of growing its memory, and lines
 * never interleave. An asynchronous writer (sonic-boom) used before interleaved a large line with
 * the exit flush on Node 24 while its write was still in flight. A kill -9 loses at most the last
 * FLUSH_MS of lines.
 */
const FLUSH_MS = 25;
const FLUSH_BYTES = 256 * 1024;

class BatchedStdout implements DestinationStream {
  /** Sees every line before it is batched (`svc start`'s summary of what startup warned about). */
  tap: ((line: string) => void) | undefined;
  private readonly buf = Buffer.allocUnsafe(FLUSH_BYTES + 64 * 1024);
  private used = 0;
  private timer: NodeJS.Timeout | undefined;
  /** stdout refused a write (closed pipe, full disk): later lines are dropped, as nothing can show them. */
  private broken = false;

  constructor() {
    process.once('exit', () => this.flush());
  }

  write(line: string): void {
    this.tap?.(line);
    // Worst case 3 bytes per UTF-16 unit; a line that could not fit even an empty buffer goes alone.
    if (line.length * 3 > this.buf.length - this.used) {
      this.flush();
      if (line.length * 3 > this.buf.length) {
        this.out(Buffer.from(line));
        return;
      }
    }
    this.used += this.buf.write(line, this.used, 'utf8');
    if (this.used >= FLUSH_BYTES) this.flush();
    else if (this.timer === undefined) this.timer = setTimeout(this.flush, FLUSH_MS).unref();
  }

  private readonly flush = (): void => {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.used) return;
    const used = this.used;
    this.used = 0;
    this.out(this.buf.subarray(0, used));
  };

  private out(bytes: Buffer): void {
    if (this.broken) return;
    try {
      writeAllSync(1, bytes);
    } catch {
      this.broken = true;
    }
  }
}

/**
 * Writes all of `bytes`: one writeSync may write only part of them (a pipe whose reader is slower
 * than we write) or refuse with EAGAIN when the descriptor is non-blocking.
 */
function writeAllSync(fd: number, bytes: Buffer): void {
  let rest = bytes;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(fd, rest));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

/**
 * The access line in pino's own format (level, time, pid, hostname, fields, msg), built by hand:
 * its fields are the kernel's (no credentials), so it needs neither redaction, whose `*.x` paths
 * visit every key of every logged object, nor pino's generic serializer.
 */
function accessLine(out: DestinationStream, isoTime: boolean): AccessLog {
  const head = `{"level":30,"time":`;
  const base = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())},"cid":`;
  const now = isoTime ? () => `"${new Date().toISOString()}"` : Date.now;
  return function writeAccessLine(cid, channel, method, url, status, ms) {
    out.write(`${head}${now()}${base}"${cid}"${channel === undefined ? '' : `,"channel":${JSON.stringify(channel)}`},"method":"${method}","url":${JSON.stringify(url)},"status":${status},"ms":${ms},"msg":"request"}\n`);
  };
}

/** The server's logger (credential fields redacted) and its access log, both on stdout. */
export function serverLoggers(level: string, redactPaths: string[], opts: { isoTime?: boolean; tap?: (line: string) => void } = {}): Loggers {
  const out = new BatchedStdout();
  out.tap = opts.tap;
  const log = pino({ level, redact: { paths: redactPaths, censor: '[redacted]' }, ...(opts.isoTime && { timestamp: pino.stdTimeFunctions.isoTime }) }, out);
  return { log, access: log.isLevelEnabled('info') ? accessLine(out, opts.isoTime === true) : undefined };
}

/** An access log written through a given logger (tests, embedders). */
export function accessLogVia(log: Logger): AccessLog | undefined {
  if (!log.isLevelEnabled('info')) return undefined;
  return (cid, channel, method, url, status, ms) => log.info({ cid, channel, method, url, status, ms }, 'request');
}
