import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { FairShare, LINGER_MS, type Release } from '../../../kernel/sandbox/fair.ts';

/**
 * The fair shares of the tenants' shared processes (kernel/sandbox/fair.ts), driven as the pool
 * drives them: a call for an isolate (tenant and service) enters when allowed, or is held; an
 * isolate with a call running is a thread; when a thread ends, held calls are offered it.
 */
interface Call {
  tenant: string;
  service: string;
  nested: boolean;
}

class Sim {
  readonly fair: FairShare<Call>;
  private readonly busy = new Map<string, number>();
  readonly started: Call[] = [];
  readonly clock: ManualClock;

  /** `sharing`: another group's Sim, whose FairShare this one shares (tenants' own processes beside the shared ones). */
  constructor(cores: number, weights: Record<string, number> = {}, cpu: Record<string, number> = {}, sharing?: Sim) {
    this.clock = sharing?.clock ?? new ManualClock();
    this.fair =
      sharing?.fair ??
      new FairShare<Call>(
        cores,
        (t) => weights[t] ?? 1,
        (t) => cpu[t] ?? 0,
        this.clock,
      );
  }

  private key(call: Call): string {
    return `${call.tenant}/${call.service}`;
  }

  submit(tenant: string, service: string, nested = false): Call {
    const call = { tenant, service, nested };
    if (this.fair.mayEnter(tenant, !this.busy.get(this.key(call)), nested)) this.start(call);
    else this.fair.hold(tenant, call, nested, this.startHeld);
    return call;
  }

  private start(call: Call): void {
    const n = (this.busy.get(this.key(call)) ?? 0) + 1;
    this.busy.set(this.key(call), n);
    if (n === 1) this.fair.threadStarted(call.tenant);
    this.started.push(call);
  }

  finish(call: Call): void {
    const n = this.busy.get(this.key(call))! - 1;
    this.busy.set(this.key(call), n);
    if (n === 0) {
      this.fair.threadEnded(call.tenant);
      this.release();
    }
  }

  /** What the pool does when a thread ends, and on its sweep. */
  release(): void {
    this.fair.release();
  }

  private readonly startHeld = (held: Call, admit: (newThread: boolean) => boolean): Release => {
    if (!admit(!this.busy.get(this.key(held)))) return 'held';
    this.start(held);
    return 'started';
  };

  has(call: Call): boolean {
    return this.started.includes(call);
  }

  threads(tenant: string): number {
    return this.fair.threadsOf(tenant);
  }
}

describe('fair shares of the shared processes', () => {
  it('a tenant alone may keep every core busy, and feed its busy isolates without limit', () => {
    const sim = new Sim(2);
    const a = sim.submit('a', 's1');
    const b = sim.submit('a', 's2');
    const c = sim.submit('a', 's3');
    expect([sim.has(a), sim.has(b), sim.has(c)]).toEqual([true, true, false]);
    // More calls for a busy isolate add no thread; they would wait behind c, first come first served.
    const more = sim.submit('a', 's1');
    expect(sim.has(more)).toBe(false);
    sim.finish(a);
    expect(sim.has(c)).toBe(true);
    expect(sim.threads('a')).toBe(2);
  });

  it('a newcomer gets a thread at once, whatever the others hold', () => {
    const sim = new Sim(2);
    for (const s of ['s1', 's2']) sim.submit('a', s);
    const b = sim.submit('b', 'x');
    expect(sim.has(b)).toBe(true);
    expect(sim.threads('b')).toBe(1);
  });

  it('a tenant over its share is held until its busy isolates drain to its share', () => {
    const sim = new Sim(2);
    const a1 = sim.submit('a', 's1');
    const a2 = sim.submit('a', 's2');
    sim.submit('b', 'x');
    // Three threads on two cores: a (share 1) may not feed its busy isolates any more.
    const fed = sim.submit('a', 's1');
    expect(sim.has(fed)).toBe(false);
    sim.finish(a2);
    // Down to its share, a's held call for its still busy isolate enters.
    expect(sim.has(fed)).toBe(true);
    expect(sim.threads('a')).toBe(1);
    // A new isolate of a's would be a second thread: held while b runs.
    const other = sim.submit('a', 's3');
    expect(sim.has(other)).toBe(false);
    sim.finish(a1);
    expect(sim.has(other)).toBe(false);
    sim.finish(fed);
    expect(sim.has(other)).toBe(true);
  });

  it('weights divide the cores: 3 to 1 of 4 cores between two flooding tenants', () => {
    const sim = new Sim(4, { a: 3, b: 1 });
    const running: Call[] = [];
    const flood = () => {
      for (let i = 0; i < 6; i++) running.push(sim.submit('a', `s${i}`), sim.submit('b', `s${i}`));
    };
    flood();
    // Calls end one by one, oldest first; each freed thread goes where the shares say.
    for (let round = 0; round < 40; round++) {
      const next = running.find((c) => sim.has(c));
      if (!next) break;
      running.splice(running.indexOf(next), 1);
      sim.finish(next);
      running.push(sim.submit(next.tenant, next.service));
    }
    expect(sim.threads('a')).toBe(3);
    expect(sim.threads('b')).toBe(1);
  });

  it('a freed thread goes to the tenant with the fewest threads per weight, then the least CPU per weight', () => {
    const sim = new Sim(3, {}, { b: 500, c: 100 });
    const a = sim.submit('a', 's');
    const b = sim.submit('b', 'x');
    sim.submit('c', 'y');
    // Three tenants, three cores: a thread each, and a second call each of b and c is held.
    const b2 = sim.submit('b', 'x2');
    const c2 = sim.submit('c', 'y2');
    expect([sim.has(b2), sim.has(c2)]).toEqual([false, false]);
    sim.finish(a);
    // a lingers a moment (its core kept for it); then b and c hold a thread each and may have
    // 1.5: c used less CPU, so it goes first.
    expect([sim.has(b2), sim.has(c2)]).toEqual([false, false]);
    sim.clock.advance(LINGER_MS + 1);
    sim.release();
    expect(sim.started.slice(-2)).toEqual([c2, b2]);
    const b3 = sim.submit('b', 'x3');
    const c3 = sim.submit('c', 'y3');
    sim.finish(b);
    // Fewer threads beats less CPU: b holds one now, c two.
    expect(sim.started.at(-1)).toBe(b3);
    expect(sim.has(c3)).toBe(false);
  });

  it('a tenant between two calls keeps its share for a moment: a flooding neighbour does not take its core in the gap', () => {
    const sim = new Sim(2);
    const b = sim.submit('b', 'x');
    const a1 = sim.submit('a', 's1');
    sim.finish(b);
    // b has no call now, but had one just before: a stays within its share of one core.
    const a2 = sim.submit('a', 's2');
    expect(sim.has(a2)).toBe(false);
    sim.clock.advance(LINGER_MS + 1);
    sim.finish(a1);
    // b's moment is over: a is alone and may use both cores.
    expect(sim.has(a2)).toBe(true);
    expect(sim.has(sim.submit('a', 's3'))).toBe(true);
    expect(sim.threads('a')).toBe(2);
  });

  it('within a tenant calls are served in order, calls made by invoke first', () => {
    const sim = new Sim(1);
    sim.submit('b', 'x');
    const a1 = sim.submit('a', 's1');
    const first = sim.submit('a', 's2');
    const second = sim.submit('a', 's3');
    const nested = sim.submit('a', 's4', true);
    expect([first, second, nested].map((c) => sim.has(c))).toEqual([false, false, false]);
    expect(sim.fair.waiting).toBe(3);
    sim.finish(a1);
    expect(sim.started.at(-1)).toBe(nested);
    sim.finish(nested);
    expect(sim.started.at(-1)).toBe(first);
  });

  it('groups sharing one FairShare (each tenant in processes of its own) share the cores, and each starts its own held calls', () => {
    const own = new Sim(2);
    const neighbour = new Sim(2, {}, {}, own);
    const a1 = own.submit('a', 's1');
    own.submit('a', 's2');
    // b's process is another group, but the cores are the same: b gets a thread at once, and a is over its share.
    const b = neighbour.submit('b', 'x');
    expect(neighbour.has(b)).toBe(true);
    const a3 = own.submit('a', 's3');
    expect(own.has(a3)).toBe(false);
    own.finish(a1);
    // Down to its share, a may not start a second thread while b has work.
    expect(own.has(a3)).toBe(false);
    neighbour.finish(b);
    neighbour.clock.advance(LINGER_MS + 1);
    // b's group offers the freed core: a's held call is started in a's group, not lost.
    neighbour.release();
    expect(own.has(a3)).toBe(true);
    expect(neighbour.has(a3)).toBe(false);
  });

  it('a held call that ends before it starts leaves the queue', () => {
    const sim = new Sim(1);
    sim.submit('b', 'x');
    const a1 = sim.submit('a', 's1');
    const held = sim.submit('a', 's2');
    sim.fair.forget('a', held);
    expect(sim.fair.waiting).toBe(0);
    sim.finish(a1);
    expect(sim.has(held)).toBe(false);
  });
});
