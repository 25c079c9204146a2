import { relative } from 'node:path';

/**
 * `svc start`'s summary for the person at its terminal, printed on stderr once the server
 * listens (the JSON log lines stay on stdout, for machines and log shippers): where it listens,
 * the Dashboard, what it deployed, how long it took, and what startup warned about, one line per
 * kind of warning however many things it named ("3 × security definition has a random password
 * … — definition: a, b, c"), where the log has a line each.
 *
 * It reads the server's own log lines as they are written (Kernel.create's `logTap`), until it
 * is rendered: a line is parsed only when it is a warning, an error or one of the two lines
 * counted, so the tap costs the startup nothing it would notice.
 */
type Line = Record<string, unknown>;

/** Fields every line has, or that say nothing about what a warning is about. */
const NOT_SUBJECTS = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'node', 'node_name', 'err']);

export class StartupSummary {
  private readonly problems: Line[] = [];
  private adminAddress: string | undefined;
  private deployed = 0;
  private done = false;
  private readonly told: string[] = [];

  /** Plugins' lines for the operator (KernelApi.tellOperator), under the Dashboard's; once rendered, on stderr at once. */
  readonly tell = (text: string): void => {
    if (this.done) process.stderr.write(`${text}\n`);
    else this.told.push(text);
  };

  readonly tap = (text: string): void => {
    if (this.done) return;
    if (text.startsWith('{"level":40') || text.startsWith('{"level":50') || text.startsWith('{"level":60')) {
      const line = parse(text);
      if (line) this.problems.push(line);
    } else if (text.includes('"msg":"service deployed"')) this.deployed++;
    else if (text.includes('"msg":"svc admin listening"')) {
      const address = parse(text)?.address;
      if (typeof address === 'string') this.adminAddress = address;
    }
  };

  /** The summary; lines logged after it are not read. */
  render(info: { address: string; configPath: string; startedAt: number; now?: number; cwd?: string }): string {
    this.done = true;
    const seconds = ((info.now ?? Date.now()) - info.startedAt) / 1000;
    const config = relative(info.cwd ?? process.cwd(), info.configPath) || info.configPath;
    const services = `${this.deployed} service${this.deployed === 1 ? '' : 's'} deployed`;
    const out = [`svc started in ${seconds.toFixed(1)} s: ${services}, config ${config}`, `  channels   ${info.address}`];
    out.push(`  Dashboard  ${this.adminAddress ? `${this.adminAddress}/admin/` : 'not listening (or not logged: server.log_level is above info)'}`);
    for (const text of this.told) out.push(`  ${text}`);
    const kinds = groupByKind(this.problems);
    if (kinds.length) {
      const errors = this.problems.filter((l) => Number(l.level) >= 50).length;
      out.push(`  ${kinds.length} kind${kinds.length === 1 ? '' : 's'} of ${errors ? 'warning and error' : 'warning'} at startup (each line of the log has the details):`);
      for (const k of kinds) out.push(`    - ${k}`);
    } else out.push('  no warnings at startup');
    return out.join('\n') + '\n';
  }
}

function parse(text: string): Line | undefined {
  try {
    return JSON.parse(text) as Line;
  } catch {
    return undefined;
  }
}

/**
 * One line per kind: lines whose messages are the same once the values of their own fields are
 * taken out of them (`set-password erp` and `set-password crm` are one kind). A kind seen once is
 * its message; seen more often, the message with each such value as its field's name in
 * capitals, and the values it had.
 */
export function groupByKind(lines: Line[]): string[] {
  const kinds = new Map<string, { level: number; lines: Line[]; fields: string[] }>();
  for (const line of lines) {
    const msg = String(line.msg ?? '');
    let kind = msg;
    const fields: string[] = [];
    for (const [key, value] of Object.entries(line)) {
      if (NOT_SUBJECTS.has(key) || typeof value !== 'string' || value.length < 2 || !kind.includes(value)) continue;
      kind = kind.split(value).join(key.toUpperCase());
      fields.push(key);
    }
    const entry = kinds.get(kind);
    if (entry) entry.lines.push(line);
    else kinds.set(kind, { level: Number(line.level), lines: [line], fields });
  }
  return [...kinds]
    .sort(([, a], [, b]) => b.level - a.level)
    .map(([kind, { level, lines: group, fields }]) => {
      const tag = level >= 50 ? 'error: ' : '';
      if (group.length === 1) return tag + String(group[0]!.msg);
      const named = fields.map((f) => `${f}: ${[...new Set(group.map((l) => String(l[f])))].join(', ')}`).join('; ');
      return `${tag}${group.length} × ${kind}${named ? ` (${named})` : ''}`;
    });
}
