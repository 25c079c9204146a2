import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { monotonicClock, type Clock } from './clock.ts';

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
 *
 * Allocation-light, because a flood is refused hundreds of times a second and every hold lives
 * through the pause, long enough to survive the kernel's young-generation collections: no
 * closure, timer or listener per refusal. A refusal is a row of a flat list until its answer has
 * finished, then a slot of a wheel of `TICK_MS` slots turned by one shared timer, which runs
 * only while something is held. Measured under the tenants bench's floods (bench/README.md,
 * Tenants, 2026-12-01): the per-refusal closures, timers and listeners were a fifth of what
 * survived the kernel's scavenges.
 */

/**
 * On a held connection, the tick it is read again at: on the socket itself, not in a Map that
 * would gain and lose an entry per refusal (docs/decisions/performance.md, per-call entries).
 */
const READ_AGAIN_AT = Symbol('svc.refusalPause.readAgainAt');
type HeldSocket = Socket & { [READ_AGAIN_AT]?: number };

/** The wheel's resolution: a held connection is read again at most this much before its pause ends, never after. */
export const TICK_MS = 20;
/** The longest pause the wheel holds (config's `refusal_pause_ms` maximum), in ticks, and one more. */
const SLOTS = Math.ceil(4_000 / TICK_MS) + 1;

export class RefusalPauses {
  /** How many connections are held. */
  private heldCount = 0;
  /** Refused answers not yet finished: [response, socket, pause ms] per refusal, flat. */
  private waiting: Array<ServerResponse | Socket | number> = [];
  /** The connections read again at each tick, by tick modulo SLOTS (a slot may still list one released and held again: its tick tells). */
  private readonly slots: HeldSocket[][] = Array.from({ length: SLOTS }, () => []);
  /** The last tick turned. */
  private turned = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private released = false;

  /** Monotonic by default: a wall clock set forward must not read every held connection at once. */
  constructor(private readonly clock: Clock = monotonicClock) {}

  /**
   * Holds `socket` once `res` (a refusal) has finished, for `pauseMs` or the answer's Retry-After,
   * if sooner. Held only in a later event-loop turn than the one its answer finished in: Node's
   * own finish work resumes the socket to discard a body the refusal left unread (on the next
   * tick), which would undo a pause made before. The rest of that body waits with the next request.
   */
  holdAfter(res: ServerResponse, socket: Socket, pauseMs: number): void {
    const retryAfter = Number(res.getHeader('retry-after'));
    const longest = Number.isFinite(retryAfter) && retryAfter >= 0 ? Math.min(pauseMs, retryAfter * 1000) : pauseMs;
    // Between 3/4 of the pause and all of it: connections refused in one burst are not all read
    // again in the same moment (a burst of their requests would stall everyone's for that moment).
    const ms = Math.round(longest * (0.75 + Math.random() * 0.25));
    // A request injected in-process (tests, light-my-request) has a stand-in socket that cannot pause.
    if (ms <= 0 || this.released || typeof socket?.pause !== 'function' || typeof socket.resume !== 'function') return;
    this.waiting.push(res, socket, ms);
    this.immediate ??= setImmediate(this.holdFinished);
  }

  /** Shutdown: every held connection is read again now, and none is held from here on. Returns how many were held. */
  releaseAll(): number {
    this.released = true;
    this.waiting = [];
    let readAgain = 0;
    for (const slot of this.slots) {
      for (const socket of slot) {
        if (socket[READ_AGAIN_AT] === undefined) continue;
        this.readAgain(socket);
        readAgain++;
      }
      slot.length = 0;
    }
    this.stop();
    return readAgain;
  }

  /** How many connections are held now (tests). */
  get size(): number {
    return this.heldCount;
  }

  /** Refusals whose answers have finished (in an earlier turn: see holdAfter) are held; the others wait for the next tick. */
  private readonly holdFinished = (): void => {
    this.immediate = undefined;
    const list = this.waiting;
    if (list.length === 0 || this.released) return;
    this.start();
    let kept = 0;
    for (let i = 0; i < list.length; i += 3) {
      const res = list[i] as ServerResponse;
      const socket = list[i + 1] as Socket;
      if (res.writableFinished) this.hold(socket, list[i + 2] as number);
      else if (!socket.destroyed) {
        list[kept++] = res;
        list[kept++] = socket;
        list[kept++] = list[i + 2]!;
      }
    }
    list.length = kept;
  };

  private hold(socket: HeldSocket, ms: number): void {
    if (socket.destroyed || this.released || socket[READ_AGAIN_AT] !== undefined) return;
    // Rounded down: read again up to a tick early, never past the pause (nor past Retry-After),
    // but not before the wheel's next turn.
    const tick = Math.max(Math.floor((this.clock.now() + ms) / TICK_MS), this.turned + 1);
    socket.pause();
    socket[READ_AGAIN_AT] = tick;
    this.heldCount++;
    this.slots[tick % SLOTS]!.push(socket);
  }

  /** The wheel turns from the current tick on (that tick included), if it was not turning. */
  private start(): void {
    if (this.timer) return;
    this.turned = Math.floor(this.clock.now() / TICK_MS) - 1;
    this.timer = setInterval(this.turn, TICK_MS);
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One turn of the wheel: every tick since the last is read again, then finished refusals are held. */
  private readonly turn = (): void => {
    const until = Math.floor(this.clock.now() / TICK_MS);
    // Behind by more than the wheel (the loop was stalled): each slot once is all there is.
    for (let tick = Math.max(this.turned + 1, until - SLOTS + 1); tick <= until; tick++) this.release(tick);
    this.turned = until;
    if (this.waiting.length > 0) this.holdFinished();
    else if (this.heldCount === 0) this.stop();
  };

  private release(tick: number): void {
    const slot = this.slots[tick % SLOTS]!;
    let kept = 0;
    for (const socket of slot) {
      const due = socket[READ_AGAIN_AT];
      if (due === undefined) continue; // read again meanwhile (and not held again)
      // Held again after a release, for a later turn of the wheel: it stays listed.
      if (due > tick) {
        slot[kept++] = socket;
        continue;
      }
      this.readAgain(socket);
    }
    slot.length = kept;
  }

  private readAgain(socket: HeldSocket): void {
    // Set to undefined, not deleted: the socket keeps its shape.
    socket[READ_AGAIN_AT] = undefined;
    this.heldCount--;
    if (!socket.destroyed) socket.resume();
  }
}
