import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long and how much a socket keeps reading after a 413 before it closes. Long enough for a
 * client that sends its whole body before reading (Python's http.client, curl without
 * Expect) to finish a few megabytes more on a LAN and then read the answer; short and small
 * enough that a client sending forever costs at most this much time and copying.
 */
export const LINGER_MS = 2_000;
export const LINGER_BYTES = 16 * 1024 * 1024;

/**
 * RFC 9112 §9.6: a server that closes while the client is still sending makes the client's
 * TCP stack answer with a reset, which can discard our 413 before the client reads it (a client
 * that sends its whole body before reading never sees it). Node's http server closes a
 * `Connection: close` response's socket with destroySoon(), which destroys it right after the
 * FIN, unread input and all. For this socket only, that becomes a lingering close: FIN after
 * the response, the rest of the body read and dropped, and the socket closed once the body
 * ends (or the client closes), LINGER_MS pass or LINGER_BYTES more arrive.
 */
export function lingerAfterRefusal(request: IncomingMessage): void {
  const socket = request.socket;
  let lingering = false;
  let dropped = 0;
  let closing = false;
  // Once the FIN is out, nothing of the response can be lost any more.
  const closeAfterFin = () => {
    if (closing) return;
    closing = true;
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  // Keeps the body flowing (a request nobody reads stops the socket reading) and bounds it.
  request.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (lingering && dropped > LINGER_BYTES) closeAfterFin();
  });
  request.once('end', () => {
    if (lingering) closeAfterFin();
  });
  socket.destroySoon = function lingerThenClose(this: Socket) {
    lingering = true;
    this.end();
    if (request.complete || dropped > LINGER_BYTES) {
      closeAfterFin();
      return;
    }
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    this.once('close', () => clearTimeout(timer));
  };
}
