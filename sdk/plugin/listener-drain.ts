import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** How often a closing listener looks for connections that have fallen quiet. */
const SWEEP_MS = 100;

/** A listener's open connections, for its shutdown. */
export interface ListenerDrain {
  /**
   * The listener is closing: from now until it has closed, every connection with no request in
   * progress is closed, as soon as it has none.
   */
  begin(): void;
}

/**
 * Watches `server`'s connections (call it before the server listens) so its shutdown ends when
 * the last answer is out. Node closes idle keep-alive connections once, as the listener closes.
 * It passes by a connection that has sent nothing yet (a client pool's spare, a browser's
 * preconnect), which it counts busy until the headers timeout (up to 60 s here), and it does
 * not look again at one that falls idle later, open until its keep-alive timeout (72 s). Either
 * held a graceful shutdown to its deadline (the tenants bench's server, with an attack client's
 * 256 spare connections, exited on the 10 s deadline with "work in flight is cut"). The set of
 * connections costs one entry per connection, nothing per request.
 */
export function listenerDrain(server: Server): ListenerDrain {
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  let sweep: NodeJS.Timeout | undefined;
  const closeQuiet = () => {
    server.closeIdleConnections();
    // Nothing read yet, nothing to answer: not even a request has begun.
    for (const socket of open) if (socket.bytesRead === 0 && !socket.destroyed) socket.destroy();
  };
  return {
    begin() {
      if (sweep || !server.listening) return;
      closeQuiet();
      sweep = setInterval(closeQuiet, SWEEP_MS).unref();
      server.once('close', () => clearInterval(sweep));
    },
  };
}
