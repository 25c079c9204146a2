import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from './wait.ts';

/** What a service reports to HeldCalls: a `tag` naming the run, and whatever else the test reads. */
export interface HeldReport {
  tag: string;
}

/**
 * A loopback HTTP server that answers no call until the test releases it. A service that reports
 * to it through an outgoing connection and awaits the answer is in flight for exactly as long as
 * the test decides: its arrival here proves the call started, and it ends only once the test has
 * done what it meant to do meanwhile (a redeploy, a reload, a signal). No call length is guessed.
 *
 * Services post a JSON body with a `tag` (the config's outgoing line: `outgoing(name)`); a body
 * that is not such a report (another test's stray connection) is answered 400 and not counted.
 */
export class HeldCalls<T extends HeldReport = HeldReport> {
  /** Every report that arrived, released or not, in arrival order. */
  readonly arrived: T[] = [];
  private readonly held: Array<{ report: T; res: ServerResponse }> = [];
  private readonly server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      let report: T;
      try {
        report = JSON.parse(text) as T;
      } catch {
        res.writeHead(400).end();
        return;
      }
      if (typeof report?.tag !== 'string') {
        res.writeHead(400).end();
        return;
      }
      this.arrived.push(report);
      this.held.push({ report, res });
    });
  });

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The `outgoing_rest` entry (YAML flow mapping) through which services reach this server; one attempt, no timeout of its own to speak of. */
  outgoing(name: string): string {
    return `{ name: ${name}, address: 'http://127.0.0.1:${this.port}', url_path: /held, timeout_ms: 60000, retry: { max_attempts: 1 } }`;
  }

  /** Reports with this tag held now (arrived and not released). */
  holding(tag: string): T[] {
    return this.held.filter((h) => h.report.tag === tag).map((h) => h.report);
  }

  /** Waits (bounded, failing with the tag in its message) until `count` reports with this tag are held; resolves with them. */
  waitHeld(tag: string, count = 1, timeoutMs = 20_000): Promise<T[]> {
    return waitFor(`${count} held call(s) tagged '${tag}' (holding ${this.holding(tag).length})`, () => this.holding(tag).length >= count && this.holding(tag), timeoutMs);
  }

  /** Answers 200 `{}` to every held report with this tag; returns how many it released. */
  release(tag: string): number {
    let released = 0;
    for (let i = this.held.length - 1; i >= 0; i--) {
      if (this.held[i]!.report.tag !== tag) continue;
      this.held[i]!.res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      this.held.splice(i, 1);
      released++;
    }
    return released;
  }

  /** Drops every held call: its connection is destroyed, and the service sees its outgoing call fail. */
  dropHeld(): void {
    for (const h of this.held.splice(0)) h.res.destroy();
  }

  async close(): Promise<void> {
    this.dropHeld();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
