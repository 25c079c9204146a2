import { load, median, printGrid, rounds, roundSpread, withSvc, type Load } from '../lib.ts';

/** Invokes per request of the fan channel: enough that their cost stands out of one request's. */
const FAN = Number(process.env.BENCH_INVOKE_FAN ?? 8);

const HELLO = `import { service } from 'svc/sdk';\nexport default service({ invokableBy: ['fan'], handle: () => ({ hello: 'world' }) });\n`;
const FAN_SERVICE = `import { service, t, invoke, invokeAll } from 'svc/sdk';
export default service({
  input: { n: t.integer({ default: 0 }), all: t.boolean({ default: false }) },
  async GET(ctx) {
    const n = ctx.input.n;
    if (ctx.input.all) return { n, last: (await invokeAll(Array.from({ length: n }, () => ({ service: 'hello' }))))[n - 1] };
    let last;
    for (let i = 0; i < n; i++) last = await invoke('hello');
    return { n, last };
  },
});
`;

/**
 * Issue 40: one invoke of a trivial service from a service, against one channel request to the
 * same trivial service, in the same run (goal: an invoke costs at most half a channel request).
 * Cases, interleaved over rounds: GET /hello (the channel request), GET /fan?n=0 (a request whose
 * service invokes nothing), GET /fan?n=FAN (the same, invoking hello FAN times, one after the
 * other) and GET /fan?n=FAN&all=1 (the FAN invokes at once, invokeAll). An invoke's CPU is
 * (fan n=FAN − fan n=0) / FAN, over every server process (kernel and sandboxes, from /proc); its
 * wall time is the same difference in the time one request takes at one connection. Default
 * config (2 sandbox processes: the callee runs in the other one).
 */
export async function run(): Promise<void> {
  const config = {
    channel_rest: [
      { name: 'hello', url_path: '/hello', service: 'hello', security: 'none' },
      { name: 'fan', url_path: '/fan', service: 'fan', security: 'none' },
    ],
  };
  await withSvc(config, { 'hello.ts': HELLO, 'fan.ts': FAN_SERVICE }, async (t) => {
    const meter = { pids: t.pids };
    const under = (path: string, connections?: number) => () => load(`${t.url}${path}`, connections ? { connections } : {}, meter);
    const [hello, fan0, fanN, fanAll, helloOne, fan0One, fanNOne] = await rounds<Load>([
      under('/hello'),
      under('/fan?n=0'),
      under(`/fan?n=${FAN}`),
      under(`/fan?n=${FAN}&all=1`),
      under('/hello', 1),
      under('/fan?n=0', 1),
      under(`/fan?n=${FAN}`, 1),
    ]);
    const cpu = (l: Load) => l.cost!.serverUs;
    const kernel = (l: Load) => l.cost!.mainUs;
    const perInvoke = (a: Load[], b: Load[], f: (l: Load) => number) => a.map((x, r) => (f(x) - f(b[r]!)) / FAN);
    const invokeCpu = perInvoke(fanN!, fan0!, cpu);
    const invokeKernel = perInvoke(fanN!, fan0!, kernel);
    const allCpu = perInvoke(fanAll!, fan0!, cpu);
    const allKernel = perInvoke(fanAll!, fan0!, kernel);
    // One connection: a request's wall time is 1 / req/s.
    const wallUs = (l: Load) => 1e6 / l.rps;
    const invokeWall = perInvoke(fanNOne!, fan0One!, wallUs);
    const m = (xs: number[]) => median(xs).toFixed(1);
    const ratio = median(invokeCpu) / median(hello!.map(cpu));
    printGrid(`Invoke: one invoke of a trivial service vs one channel request to it (goal ≤ 0.5× its CPU; medians of ${hello!.length} interleaved rounds)`, ['case', 'req/s', 'CPU µs per call, all processes', 'kernel µs', 'wall µs at 1 connection', 'note'], [
      ['channel request GET /hello', m(hello!.map((l) => l.rps)), m(hello!.map(cpu)), m(hello!.map(kernel)), m(helloOne!.map(wallUs)), 'the baseline'],
      ['channel request GET /fan?n=0 (invokes nothing)', m(fan0!.map((l) => l.rps)), m(fan0!.map(cpu)), m(fan0!.map(kernel)), m(fan0One!.map(wallUs)), ''],
      [`GET /fan?n=${FAN} (${FAN} invokes of hello, one after the other)`, m(fanN!.map((l) => l.rps)), m(fanN!.map(cpu)), m(fanN!.map(kernel)), m(fanNOne!.map(wallUs)), ''],
      [`GET /fan?n=${FAN}&all=1 (${FAN} invokes at once, invokeAll)`, m(fanAll!.map((l) => l.rps)), m(fanAll!.map(cpu)), m(fanAll!.map(kernel)), '', ''],
      ['one invoke (difference / ' + FAN + ')', '', m(invokeCpu), m(invokeKernel), m(invokeWall), `${ratio.toFixed(2)}× a channel request's CPU (rounds ${roundSpread(invokeCpu, hello!.map(cpu))})`],
      ['one invoke within invokeAll', '', m(allCpu), m(allKernel), '', `${(median(allCpu) / median(hello!.map(cpu))).toFixed(2)}× (rounds ${roundSpread(allCpu, hello!.map(cpu))})`],
    ]);
  });
}
