import { Agent, request } from 'undici';
import { interleaved, load, printTable, rssMb, withSvc, withTarget, type Row, type Target } from '../lib.ts';

const CALLER = `import { service, outgoing } from 'svc/sdk';
const crm = outgoing('crm');
export default service({ async handle(ctx) { return (await crm.get(ctx.cid, { params: { id: 1 } })).data; } });
`;
const HOLDER = `import { service, outgoing } from 'svc/sdk';
const slow = outgoing('slow');
export default service({ limits: { timeoutMs: 30000 }, async handle(ctx) { return (await slow.get(ctx.cid)).data; } });
`;
const IN_FLIGHT = 1000;

/**
 * Issue 11: a channel whose service makes one outgoing call, against a bare Fastify handler
 * calling the same upstream with undici (both one HTTP hop in front of the upstream), in the same
 * run; then the memory of 1,000 calls in flight at once.
 */
export async function run(): Promise<void> {
  await withTarget('upstream', undefined, async (upstream) => {
    const config = {
      channel_rest: [
        { name: 'call', url_path: '/call', service: 'caller', security: 'none' },
        { name: 'hold', url_path: '/hold', service: 'holder', security: 'none' },
      ],
      outgoing_rest: [
        { name: 'crm', address: upstream.url, url_path: '/item/{id}', max_connections: 128 },
        { name: 'slow', address: upstream.url, url_path: '/hold', max_connections: 1024, timeout_ms: 30000 },
      ],
    };
    const rows = await withTarget('proxy', upstream.url, (proxy) =>
      withSvc(config, { 'caller.ts': CALLER, 'holder.ts': HOLDER }, async (svc) => {
        const [direct, viaSvc] = await interleaved([() => load(`${proxy.url}/call`), () => load(`${svc.url}/call`)]);
        const memory = await inFlightMemory(svc, upstream);
        const out: Row[] = [
          { name: 'bare Fastify + undici calling the upstream', load: direct!, ratio: 1 },
          { name: 'svc channel → service → outgoing connection', load: viaSvc!, ratio: viaSvc!.rps / direct!.rps, rssMb: rssMb(svc.pids) },
          { name: `RSS with ${IN_FLIGHT} outgoing calls in flight`, value: `${memory.inFlight} held`, rssMb: memory.peakMb, note: `idle ${memory.idleMb} MB; ≈ ${memory.kbPerCall} KB per call in flight (kernel + sandbox processes)` },
        ];
        return out;
      }),
    );
    printTable('Outgoing: service calling an upstream vs bare undici (goal ≥ 0.5×; best of interleaved rounds)', rows, 'vs direct');
  });
}

async function inFlightMemory(svc: Target, upstream: Target): Promise<{ idleMb: number; peakMb: number; kbPerCall: number; inFlight: number }> {
  const agent = new Agent({ connections: IN_FLIGHT + 10, headersTimeout: 60_000, bodyTimeout: 60_000 });
  const idleMb = rssMb(svc.pids);
  const calls = Array.from({ length: IN_FLIGHT }, () => request(`${svc.url}/hold`, { dispatcher: agent }).then((r) => r.body.text()));
  let inFlight = 0;
  let peakMb = idleMb;
  const until = Date.now() + 3500;
  while (Date.now() < until) {
    inFlight = Math.max(inFlight, Number(await (await request(`${upstream.url}/held`)).body.text()));
    peakMb = Math.max(peakMb, rssMb(svc.pids));
    await new Promise((r) => setTimeout(r, 100));
  }
  await Promise.all(calls);
  await agent.close();
  return { idleMb, peakMb, kbPerCall: Math.round(((peakMb - idleMb) * 1024) / IN_FLIGHT), inFlight };
}
