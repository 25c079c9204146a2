import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * After a 429 (or a quarantined service's 503) on a keep-alive connection, the server reads that
 * connection's next request only after `server.refusal_pause_ms` (or the answer's Retry-After, if
 * sooner), less up to a quarter at random. A client that honours
 * Retry-After waits anyway and never notices; one that resends at once on the same connection,
 * as a flood does, is held to one refusal per pause per connection instead of thousands a
 * second, each of which costs the one event loop that serves every tenant (bench/README.md,
 * Tenants). Nothing is read or parsed meanwhile: the bytes wait in the socket's buffers.
 *
 * Set once the response finished and Node's own finish work is done. A socket that closes
 * meanwhile drops its timer.
 */
export function pauseAfterRefusal(res: ServerResponse, socket: Socket, pauseMs: number): void {
  const retryAfter = Number(res.getHeader('retry-after'));
  const longest = Number.isFinite(retryAfter) && retryAfter >= 0 ? Math.min(pauseMs, retryAfter * 1000) : pauseMs;
  // Between 3/4 of the pause and all of it: connections refused in one burst are not all read
  // again in the same moment (a burst of their requests would stall everyone's for that moment).
  const ms = Math.round(longest * (0.75 + Math.random() * 0.25));
  // A request injected in-process (tests, light-my-request) has a stand-in socket that cannot pause.
  if (ms <= 0 || typeof socket?.pause !== 'function' || typeof socket.resume !== 'function') return;
  const pause = () => {
    if (socket.destroyed) return;
    socket.pause();
    const timer = setTimeout(() => {
      socket.off('close', stop);
      if (!socket.destroyed) socket.resume();
    }, ms);
    const stop = () => clearTimeout(timer);
    socket.once('close', stop);
  };
  // After Node's own finish work: it resumes the socket to discard a body the refusal left unread
  // (on the next tick), which would undo a pause made before. The rest of that body waits with
  // the next request. The answer may be out already (sent before the chain's last await returned).
  const later = () => setImmediate(pause);
  if (res.writableFinished) later();
  else res.once('finish', later);
}
