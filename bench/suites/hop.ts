import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLK_TCK, KERNEL_NODE_FLAGS, median, printGrid, procStat, ROUNDS } from '../lib.ts';
import { HELLO } from '../peers/channel.ts';

/**
 * The sandbox hop alone: the kernel's invoke() of a trivial service in a closed loop, 50 calls in
 * flight, no HTTP. Beside it, in the same process and run, the same loop with the call answered
 * in the kernel itself, so the difference is what the hop costs (encode, write, read, parse,
 * check, settle). Runs in a child process with the kernel's Node flags, as `svc start` runs.
 */
const CALLS = Number(process.env.BENCH_HOP_CALLS ?? 100_000);
const IN_FLIGHT = 50;

export async function run(): Promise<void> {
  const r = spawnSync(process.execPath, [...KERNEL_NODE_FLAGS, '--import', 'tsx', fileURLToPath(import.meta.url), 'child'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`hop bench failed with exit code ${r.status}`);
  const rounds = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Array<{ loop: number; kernel: number; sandbox: number; rate: number }>;
  const m = (f: (x: (typeof rounds)[number]) => number) => median(rounds.map(f));
  printGrid(`Sandbox hop: kernel invoke() of a trivial service, ${IN_FLIGHT} in flight, ${CALLS} calls (medians of ${rounds.length} rounds)`, ['case', 'kernel CPU µs/call', 'sandbox CPU µs/call', 'calls/s', 'note'], [
    ['loop alone (answered in the kernel)', m((x) => x.loop).toFixed(2), '—', '—', 'the harness: request object, promise, result check'],
    ['over the hop, 1 sandbox process', m((x) => x.kernel).toFixed(2), m((x) => x.sandbox).toFixed(2), String(Math.round(m((x) => x.rate))), `the hop costs the kernel ${(m((x) => x.kernel) - m((x) => x.loop)).toFixed(2)} µs/call`],
  ]);
}

async function child(): Promise<void> {
  const pino = (await import('pino')).default;
  const { Kernel } = await import('../../kernel/kernel.ts');
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-hop-'));
  mkdirSync(join(dir, 'services'));
  writeFileSync(join(dir, 'services', 'hello.ts'), HELLO);
  writeFileSync(join(dir, 'svc.yaml'), `server: { data_dir: ${JSON.stringify(join(dir, 'data'))}, services_dir: ${JSON.stringify(join(dir, 'services'))}, sandbox: { workers: 1 } }\nchannel_rest:\n  - { name: hello, url_path: /hello, service: hello, security: none }\n`);
  const kernel = await Kernel.create({ configPath: join(dir, 'svc.yaml'), logger: pino({ level: 'silent' }), env: { ...process.env, SVC_ADMIN_PORT: '0' } });
  try {
    const sandboxPid = kernel.pool.pids()[0]!;
    const cpuUs = (pid: number) => ((procStat(pid)?.ticks ?? 0) * 1e6) / CLK_TCK;
    let n = 0;
    const request = () => ({ service: 'hello', cid: 'bench' + (n++).toString(16).padStart(12, '0'), channel: 'hello', method: 'GET', path: '/hello', input: {}, headers: { host: '127.0.0.1:8080', connection: 'keep-alive' }, query: {}, pathParams: {} });
    const answered = { status: 200, headers: {}, body: { hello: 'world' } };
    const loop = async (calls: number, invoke: (req: ReturnType<typeof request>) => Promise<{ status: number }>) => {
      let left = calls;
      const one = async () => {
        while (left-- > 0) if ((await invoke(request())).status !== 200) throw new Error('call failed');
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, one));
    };
    const inKernel = (req: ReturnType<typeof request>) => Promise.resolve(req.service === 'hello' ? answered : { status: 500 });
    const overHop = (req: ReturnType<typeof request>) => kernel.invoke(req);
    await loop(20_000, overHop);
    const rounds = [];
    for (let i = 0; i < ROUNDS; i++) {
      let c = process.cpuUsage();
      await loop(CALLS, inKernel);
      c = process.cpuUsage(c);
      const loopUs = (c.user + c.system) / CALLS;
      const s0 = cpuUs(sandboxPid);
      const t0 = performance.now();
      c = process.cpuUsage();
      await loop(CALLS, overHop);
      c = process.cpuUsage(c);
      const ms = performance.now() - t0;
      rounds.push({ loop: loopUs, kernel: (c.user + c.system) / CALLS, sandbox: (cpuUs(sandboxPid) - s0) / CALLS, rate: (CALLS / ms) * 1000 });
    }
    process.stdout.write(JSON.stringify(rounds) + '\n');
  } finally {
    await kernel.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') {
  await child();
  process.exit(0);
}
