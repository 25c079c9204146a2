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
 * One per listener: at shutdown `releaseAll()` reads every held connection again at once. A held
 * connection may hold the rest of the refused request's body, so Node counts it busy, not idle,
 * and closing idle connections would pass it by: the listener's close then waited for the pause,
 * and for the keep-alive timeout after it (the tenants bench's server took its whole 10 s drain).
 */
export class RefusalPauses {
  /** Each held connection and the timer that reads it again. */
  private readonly held = new Map<Socket, () => void>();
  private released = false;

  /**
   * Holds `socket` once `res` (a refusal) has finished, for `pauseMs` or the answer's Retry-After,
   * if sooner. Set after Node's own finish work, which resumes the socket to discard a body the
   * refusal left unread (on the next tick) and would undo a pause made before. The rest of that
   * body waits with the next request.
   */
  holdAfter(res: ServerResponse, socket: Socket, pauseMs: number): void {
    const retryAfter = Number(res.getHeader('retry-after'));
    const longest = Number.isFinite(retryAfter) && retryAfter >= 0 ? Math.min(pauseMs, retryAfter * 1000) : pauseMs;
    // Between 3/4 of the pause and all of it: connections refused in one burst are not all read
    // again in the same moment (a burst of their requests would stall everyone's for that moment).
    const ms = Math.round(longest * (0.75 + Math.random() * 0.25));
    // A request injected in-process (tests, light-my-request) has a stand-in socket that cannot pause.
    if (ms <= 0 || this.released || typeof socket?.pause !== 'function' || typeof socket.resume !== 'function') return;
    const pause = () => this.hold(socket, ms);
    // The answer may be out already (sent before the chain's last await returned).
    const later = () => setImmediate(pause);
    if (res.writableFinished) later();
    else res.once('finish', later);
  }

  /** Shutdown: every held connection is read again now, and none is held from here on. */
  releaseAll(): void {
    this.released = true;
    for (const release of [...this.held.values()]) release();
  }

  private hold(socket: Socket, ms: number): void {
    if (socket.destroyed || this.released || this.held.has(socket)) return;
    socket.pause();
    const release = () => {
      clearTimeout(timer);
      socket.off('close', forget);
      this.held.delete(socket);
      if (!socket.destroyed) socket.resume();
    };
    const forget = () => {
      clearTimeout(timer);
      this.held.delete(socket);
    };
    const timer = setTimeout(release, ms);
    socket.once('close', forget);
    this.held.set(socket, release);
  }
}
