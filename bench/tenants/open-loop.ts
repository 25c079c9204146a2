/**
 * The well-behaved tenant's client, a child process of the tenants suite (bench/suites/tenants.ts):
 * an open-loop load generator. Requests leave at a fixed rate whatever the server does, and each
 * one's latency is counted from the time it was due to leave, not from when it left: a server
 * that stalls for 200 ms shows 200 ms on every request that fell due in the stall, where a
 * closed-loop client (autocannon) would simply send less and hide it (coordinated omission).
 *
 * Its own process so that the attack clients' work never delays its timers or its reads.
 * IPC: the suite sends `{ run: { seconds } }`; the child answers with a Round.
 */
import { Pool } from 'undici';

export interface Round {
  /** Latency of every request due in the round, ms, from its due time to its whole answer. */
  latencies: number[];
  /** Requests answered outside 2xx, by status. */
  statuses: Record<string, number>;
  /** Requests with no answer: connection errors and timeouts, by error name. */
  errors: Record<string, number>;
  /** The first answer's body of each status outside 2xx (the refusal's details). */
  bodies: Record<string, string>;
  /** CPU this process used in the round, ms (the generator's own cost on the shared cores). */
  cpuMs: number;
  /** How late each request left, ms: the generator's own lag (timers, a busy machine), part of the latencies. */
  sendLags: number[];
}

const [origin, path, rateText, bodyText] = process.argv.slice(2) as [string, string, string, string];
const RATE = Number(rateText);
/** No answer within this long is a failure (a timeout), not a latency. */
const TIMEOUT_MS = 10_000;

// Enough connections that requests never wait for one while the server answers at all; a stall
// longer than 64 / RATE seconds queues them in the pool, still counted from their due time.
const pool = new Pool(origin, { connections: 64, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS });

async function send(due: number, round: Round): Promise<void> {
  try {
    const res = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body: bodyText, signal: AbortSignal.timeout(TIMEOUT_MS) });
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode > 299) {
      round.statuses[res.statusCode] = (round.statuses[res.statusCode] ?? 0) + 1;
      round.bodies[res.statusCode] ??= text.slice(0, 300);
    } else round.latencies.push(performance.now() - due);
  } catch (err) {
    // AbortSignal.timeout's DOMException has a numeric code (23): the name says more.
    const e = err as { code?: unknown; name?: string };
    const key = typeof e.code === 'string' ? e.code : (e.name ?? 'error');
    round.errors[key] = (round.errors[key] ?? 0) + 1;
  }
}

async function run(seconds: number): Promise<Round> {
  const round: Round = { latencies: [], statuses: {}, errors: {}, bodies: {}, cpuMs: 0, sendLags: [] };
  const cpu = process.cpuUsage();
  const total = Math.round(seconds * RATE);
  const start = performance.now() + 5;
  const inFlight: Promise<void>[] = [];
  let sent = 0;
  await new Promise<void>((done) => {
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + (sent * 1000) / RATE <= now) {
        const due = start + (sent * 1000) / RATE;
        round.sendLags.push(now - due);
        inFlight.push(send(due, round));
        sent++;
      }
      if (sent === total) return done();
      // Wake for the next due request; timers fire at ms granularity, and lateness is counted.
      setTimeout(tick, Math.max(0, start + (sent * 1000) / RATE - performance.now()));
    };
    tick();
  });
  await Promise.all(inFlight);
  const used = process.cpuUsage(cpu);
  round.cpuMs = (used.user + used.system) / 1000;
  return round;
}

process.on('message', (m: { run?: { seconds: number } }) => {
  if (m.run) void run(m.run.seconds).then((r) => process.send!(r));
});
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
