/**
 * Requests per second of one channel, in one run: with no rules, with 3 rules of 2 ranges
 * each (the client counted by the last rule), and with a firewall rule denying another
 * range in front of them. Goal: both rule rows at >= 0.95 of the no-rules row.
 * Run: node --import tsx bench/rate-limit-http.ts   (BENCH_SECONDS=5 by default; prints markdown rows)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { stringify } from 'yaml';
import { Kernel } from '../kernel/kernel.ts';

interface CannonResult {
  requests: { average: number };
  non2xx: number;
  errors: number;
}
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: {
  url: string;
  connections: number;
  duration: number;
}) => Promise<CannonResult>;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ADMIT_ALL = { rate: 1_000_000_000, burst: 1_000_000_000, limit: 1_000_000_000_000, limit_unit: 'day' };

const threeRules = [
  { cidr_list: ['192.0.2.0/24', '2001:db8::/32'], time_range: [{ is_all_day: true, rate: 50 }, { time_from: '22:00', time_to: '06:00', rate: 5 }] },
  { cidr_list: ['198.51.100.0/24'], time_range: [{ is_all_day: true, limit: 10, limit_unit: 'minute' }, { time_from: '09:00', time_to: '17:00', rate: 5 }] },
  { cidr_list: [], time_range: [{ is_all_day: true, ...ADMIT_ALL }, { time_from: '03:00', time_to: '03:01', ...ADMIT_ALL }] },
];
const firewall = [{ cidr_list: ['203.0.113.0/24'], time_range: [{ is_all_day: true, disallowed: true }] }, ...threeRules];

const scenarios: Array<[string, unknown[] | undefined]> = [
  ['channel, no rate-limit rules', undefined],
  ['channel, 3 rules x 2 ranges (client counted)', threeRules],
  ['channel, firewall rule denying another range + 3 rules', firewall],
];

async function run(rules: unknown[] | undefined): Promise<CannonResult> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  try {
    mkdirSync(join(dir, 'services'));
    writeFileSync(join(dir, 'services', 'echo.ts'), `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`);
    const config = {
      server: { port: 0, data_dir: join(dir, 'data'), services_dir: join(dir, 'services'), log_level: 'silent', trusted_proxies: ['127.0.0.1'] },
      channel_rest: [{ name: 'bench', url_path: '/bench', service: 'echo', security: 'none', ...(rules ? { rate_limiting: rules } : {}) }],
    };
    writeFileSync(join(dir, 'svc.yaml'), stringify(config));
    const kernel = await Kernel.create({ configPath: join(dir, 'svc.yaml'), logger: pino({ level: 'silent' }) });
    try {
      const url = `${await kernel.listen()}/bench`;
      await autocannon({ url, connections: 50, duration: 1 });
      return await autocannon({ url, connections: 50, duration: SECONDS });
    } finally {
      await kernel.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows: Array<[string, CannonResult]> = [];
for (const [name, rules] of scenarios) rows.push([name, await run(rules)]);
const baseline = rows[0]![1].requests.average;
console.log('| rate-limit HTTP benchmark | req/s | vs no rules | non-2xx | errors |');
console.log('|---|---:|---:|---:|---:|');
for (const [name, r] of rows) {
  console.log(`| ${name} | ${Math.round(r.requests.average)} | ${(r.requests.average / baseline).toFixed(3)} | ${r.non2xx} | ${r.errors} |`);
}
