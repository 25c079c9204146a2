import { startKernel, type StartOptions, type TestKernel } from '../../helpers/kernel.ts';

export interface ObservedKernel extends TestKernel {
  /** http://127.0.0.1:PORT of the admin listener. */
  admin: string;
  /** http://127.0.0.1:PORT of the channel listener. */
  url: string;
  logs: Array<Record<string, unknown>>;
}

/** A kernel on real sockets: the channel listener and the admin listener, both on free ports. */
export async function startObserved(opts: StartOptions): Promise<ObservedKernel> {
  const logs: Array<Record<string, unknown>> = opts.logs ?? [];
  const k = await startKernel({ ...opts, listen: true, logs, env: { SVC_ADMIN_PASSWORD: 'admin-test-password', ...opts.env } });
  const line = logs.find((l) => l.msg === 'svc admin listening');
  if (!line) throw new Error('the admin listener did not start');
  return Object.assign(k, { admin: String(line.address), url: k.url!, logs });
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus text exposition → samples (comments skipped; label values unescaped). */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1]!, labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return out;
}

/** The value of the sample with this name and exactly these labels; 0 when the series does not exist (yet). */
export function sampleValue(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels);
  const found = samples.filter((s) => s.name === name && Object.keys(s.labels).length === want.length && want.every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)}: ${found.length} samples`);
  return found[0]?.value ?? 0;
}
