import { relative } from 'node:path';
import pino, { type Logger } from 'pino';
import { loadConfig, resolveDir } from '../kernel/kernel.ts';
import { logRedactPaths } from '../kernel/plugin.ts';

/**
 * `svc dev`'s logger: the server's log lines (same level, same redaction) made for a person at a
 * terminal. The few lines a developer acts on are rewritten first: the access line fits one
 * line, a deploy error and an exception name the service file by its path from here, with the
 * source's line and column (kernel/sandbox/source-map.ts), and the exception's stack frames.
 */
export interface DevLog {
  log: Logger;
  /** The one line printed once the server listens. */
  banner(address: string): string;
}

type Line = Record<string, unknown>;

/** `orders.ts:3:7` and `file:///services/orders.ts:3:7` (the isolate's name for it) as `services/orders.ts:3:7`. */
export function inServicesDir(text: string, dir: string): string {
  return text.replace(/file:\/\/\/services\//g, `${dir}/`).replace(/^([\w.-]+\.(?:ts|js|mjs):\d+:\d+)/gm, `${dir}/$1`);
}

const indent = (text: string) => text.replace(/^/gm, '    ');

/** One log line, rewritten for reading; fields it folds into the message are removed. */
export function devLine(line: Line, dir: string): Line {
  const { msg } = line;
  if (msg === 'request' && typeof line.status === 'number') {
    const { method, url, status, ms, channel, cid, ...rest } = line;
    const via = channel === undefined ? '' : `${String(channel)}, `;
    return { ...rest, msg: `${status} ${String(method)} ${String(url)} (${via}${String(ms)} ms, cid ${String(cid)})` };
  }
  if (msg === 'service raised an exception') {
    const { error, stack, service, ...rest } = line;
    const frames = typeof stack === 'string' ? `\n${inServicesDir(stack, dir)}` : '';
    return { ...rest, msg: `${String(service)} raised ${String(error)}${frames}` };
  }
  if (typeof msg === 'string' && typeof line.error === 'string' && typeof line.service === 'string') {
    // Deploy errors: `file:line:col: message`, one per line.
    const { error, service: _service, file: _file, ...rest } = line;
    return { ...rest, msg: `${msg}\n${indent(inServicesDir(error, dir))}` };
  }
  if (typeof msg === 'string' && msg.startsWith('config change refused') && Array.isArray(line.issues)) {
    // One line per problem, under the file's path from here.
    const { issues, source, ...rest } = line;
    const file = typeof source === 'string' ? relative(process.cwd(), source) || source : 'the config';
    return { ...rest, msg: `${file}: ${msg}\n${indent(issues.map(String).join('\n'))}` };
  }
  if ((msg === 'service deployed' || msg === 'service undeployed') && typeof line.file === 'string') {
    const { file, service: _service, ...rest } = line;
    return { ...rest, msg: `${msg.replace('service ', '')} ${dir}/${file}` };
  }
  return line;
}

/** The dev logger of a config (which it loads to know the level, the redactions and the services directory). */
export async function devLogger(configPath: string, color = !!process.stdout.isTTY, write = (text: string) => void process.stdout.write(text)): Promise<DevLog> {
  const { config, plugins } = await loadConfig(configPath);
  const servicesDir = resolveDir(config.server.services_dir);
  const dir = relative(process.cwd(), servicesDir) || '.';
  // Loaded here, not at the top: every `svc` command imports this file, only `svc dev` prints this way.
  const { prettyFactory } = await import('pino-pretty');
  const pretty = prettyFactory({ colorize: color, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true });
  let admin: string | undefined;
  const destination = {
    write(text: string) {
      const line = JSON.parse(text) as Line;
      if (line.msg === 'svc admin listening' && typeof line.address === 'string') admin = line.address;
      write(pretty(devLine(line, dir)));
    },
  };
  const log = pino({ level: config.server.log_level, redact: { paths: logRedactPaths(plugins), censor: '[redacted]' } }, destination);
  return {
    log,
    banner: (address) =>
      `svc dev: channels on ${address}, admin ${admin ? `on ${admin}` : 'off'}; watching ${dir}/ and ${relative(process.cwd(), configPath) || configPath} (Ctrl-C stops)`,
  };
}
