import { connect } from 'node:net';

/**
 * Raw bytes to a listener, for what a client library would not send: `first` at once, then
 * `later` after a pause (or nothing more), the socket half-closed after `first` when `end`.
 * Resolves with everything the server sent, once it closed the connection, and how long that took.
 */
export function rawHttp(base: string, first: string, opts: { end?: boolean; later?: { text: string; afterMs: number } } = {}): Promise<{ response: string; closedAfterMs: number }> {
  const { port, hostname } = new URL(base);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(Number(port), hostname);
    let response = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (response += c));
    socket.on('close', () => resolve({ response, closedAfterMs: Date.now() - started }));
    socket.on('error', reject);
    if (opts.end) socket.end(first);
    else socket.write(first);
    const later = opts.later;
    if (later) setTimeout(() => socket.writable && socket.write(later.text), later.afterMs);
  });
}

/** Status, CID header and JSON body of a raw response. */
export function parseRaw(response: string): { status: number; cid: string | undefined; body: Record<string, unknown> } {
  const [head, body] = response.split('\r\n\r\n');
  return { status: Number(head!.split(' ')[1]), cid: /\r\nx-svc-cid: ([0-9a-f]+)/i.exec(head!)?.[1], body: JSON.parse(body!) as Record<string, unknown> };
}
