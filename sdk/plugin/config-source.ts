import { parseDocument } from 'yaml';
import type { ConfigIssue } from './contract.ts';

/** A config that cannot be used: every problem found, each as `path: message` (and as data in `details` when known). */
export class ConfigError extends Error {
  constructor(
    readonly issues: string[],
    readonly details: ConfigIssue[] = issues.map((message) => ({ path: [], message })),
  ) {
    super(issues.join('\n'));
    this.name = 'ConfigError';
  }
}

/** YAML text → plain data, with `${NAME}` replaced from env; a missing variable is an error. */
export function readSource(text: string, env: NodeJS.ProcessEnv): unknown {
  const doc = parseDocument(text, { prettyErrors: true });
  // Line and column only: the YAML library's code frame would copy the offending line (maybe a secret) into logs.
  if (doc.errors.length) throw new ConfigError(doc.errors.map((e) => `YAML: ${e.message.split(' at line ')[0]!.split('\n')[0]}${e.linePos ? ` at line ${e.linePos[0].line}, column ${e.linePos[0].col}` : ''}`));
  const issues: string[] = [];
  const substitute = (value: unknown, path: string): unknown => {
    if (typeof value === 'string') {
      return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
        const v = env[name];
        if (v === undefined) {
          issues.push(`${path || '(root)'}: environment variable ${name} is not set`);
          return '';
        }
        return v;
      });
    }
    if (Array.isArray(value)) return value.map((v, i) => substitute(v, `${path}[${i}]`));
    if (value && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = substitute(v, path ? `${path}.${k}` : k);
      return out;
    }
    return value;
  };
  const data = substitute(doc.toJS() ?? {}, '');
  if (issues.length) throw new ConfigError(issues);
  return data;
}
