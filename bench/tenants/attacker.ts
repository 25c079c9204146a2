/**
 * The attacker's clients, a child process of the tenants suite (bench/suites/tenants.ts), apart
 * from the victim's client so that neither delays the other's event loop. Each attack keeps its
 * requests in flight (closed loop: each is sent again as soon as it is answered, refused or not).
 * IPC: `{ start: [{ tenant, attack }] }` starts attacks, each by the tenant named (answers
 * `{ started: true }`); `{ stop: true }` stops them, abandoning the requests in flight, and
 * answers with the Outcomes.
 */
import { setMaxListeners } from 'node:events';
import { Agent } from 'undici';
import { ATTACKS, ORDER, type Attack, type AttackName } from './setup.ts';

export interface Outcomes {
  /** Answers by status, and requests without one by error code. */
  counts: Record<string, number>;
  /** CPU this process used while the attacks ran, ms. */
  cpuMs: number;
  /** How long the attacks ran, ms. */
  ms: number;
}

const [origin] = process.argv.slice(2) as [string];
const agent = new Agent({ connections: 512, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 30_000, bodyTimeout: 30_000 });

let running: { stop: AbortController; loops: Promise<void>[]; counts: Record<string, number>; cpu: NodeJS.CpuUsage; at: number } | undefined;

export interface AttackBy {
  tenant: string;
  attack: AttackName;
}

function start(attacks: AttackBy[]): void {
  const stop = new AbortController();
  // Every request of the attacks listens to it.
  setMaxListeners(0, stop.signal);
  const counts: Record<string, number> = {};
  const count = (key: string) => (counts[key] = (counts[key] ?? 0) + 1);
  const loops: Promise<void>[] = [];
  for (const { tenant, attack } of attacks) {
    const a: Attack = ATTACKS[attack];
    for (const [channel, inFlight] of a.load) {
      const path = `/t/${tenant}/${channel}`;
      for (let i = 0; i < inFlight; i++) {
        loops.push(
          (async () => {
            while (!stop.signal.aborted) {
              try {
                const res = await agent.request({ origin, path, method: a.post ? 'POST' : 'GET', headers: a.post ? { 'content-type': 'application/json' } : {}, body: a.post ? ORDER : undefined, signal: stop.signal });
                await res.body.dump();
                count(String(res.statusCode));
              } catch (err) {
                if (stop.signal.aborted) return;
                count((err as { code?: string }).code ?? 'error');
                // A refused connection would spin; a real attacker retries as fast, but not in a hot loop of errors.
                await new Promise((r) => setTimeout(r, 10));
              }
            }
          })(),
        );
      }
    }
  }
  running = { stop, loops, counts, cpu: process.cpuUsage(), at: performance.now() };
}

async function stop(): Promise<Outcomes> {
  if (!running) return { counts: {}, cpuMs: 0, ms: 0 };
  const r = running;
  running = undefined;
  const ms = performance.now() - r.at;
  r.stop.abort();
  await Promise.all(r.loops);
  const used = process.cpuUsage(r.cpu);
  return { counts: r.counts, cpuMs: (used.user + used.system) / 1000, ms };
}

process.on('message', (m: { start?: AttackBy[]; stop?: true }) => {
  if (m.start) {
    start(m.start);
    process.send!({ started: true });
  } else if (m.stop) void stop().then((o) => process.send!(o));
});
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
