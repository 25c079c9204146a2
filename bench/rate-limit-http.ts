/**
 * Requests per second of the same channel, in one run and one server (its own process, so the
 * load generator does not share its event loop): with no rules, with 3 rules of 2 ranges each
 * (the client counted by the last rule), and with a firewall rule denying another range in front
 * of them (which also adds the before-authentication firewall step). Goal: both rule rows at
 * >= 0.95 of the no-rules row.
 * Run: node --import tsx bench/rate-limit-http.ts   (or `npm run bench -- rate-limit`);
 * BENCH_SECONDS (default 5) per measurement, BENCH_ROUNDS (default 3) measurements per row.
 */
import { pathToFileURL } from 'node:url';
import { load, printTable, THREE_RATE_RULES, withSvc, type Load, type Row } from './lib.ts';

/** Measurements per row (BENCH_SECONDS each); the best one counts. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const echo = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`;

const firewall = [{ cidr_list: ['203.0.113.0/24'], time_range: [{ is_all_day: true, disallowed: true }] }, ...THREE_RATE_RULES];

const channel = (name: string, rules?: unknown[]) => ({
  name,
  url_path: `/${name}`,
  service: 'echo',
  security: 'none',
  ...(rules ? { rate_limiting: rules } : {}),
});

export async function run(): Promise<void> {
  const config = {
    // The load comes from 127.0.0.1 without forwarded headers: the socket address is the client.
    server: { trusted_proxies: ['127.0.0.1'] },
    channel_rest: [channel('plain'), channel('rules', THREE_RATE_RULES), channel('firewall', firewall)],
  };
  const rows: Row[] = await withSvc(config, { 'echo.ts': echo }, async (t) => {
    const paths = ['plain', 'rules', 'firewall'] as const;
    // The first seconds of a fresh server (JIT, sandbox warm-up) would be charged to whichever row runs first.
    for (const path of paths) await load(`${t.url}/${path}`, { duration: 2 });
    // Rows measured in turn, ROUNDS times, keeping each row's best: a burst of other work on the
    // machine then costs one round of one row, not the ratio.
    const best = new Map<string, Load>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const path of paths) {
        const measured = await load(`${t.url}/${path}`);
        if ((best.get(path)?.rps ?? -1) < measured.rps) best.set(path, measured);
      }
    }
    const [plain, rules, fenced] = paths.map((p) => best.get(p)!);
    return [
      { name: 'channel, no rate-limit rules', load: plain, ratio: 1 },
      { name: 'channel, 3 rules x 2 ranges (client counted)', load: rules, ratio: rules!.rps / plain!.rps },
      { name: 'channel, firewall rule denying another range + 3 rules', load: fenced, ratio: fenced!.rps / plain!.rps },
    ];
  });
  printTable('Rate limiting: rules vs none on the same channel (goal ≥ 0.95×)', rows, 'vs no rules');
}

// Standalone (bench/run.ts spawns this file as a script).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await run();
