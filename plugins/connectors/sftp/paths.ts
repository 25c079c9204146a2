import { SvcError } from '../../../sdk/plugin/index.ts';

/**
 * Paths services and the file pickup give are relative to a folder's root and never leave it.
 * They are checked as text before anything is sent: no `..` segment, not absolute, no NUL or
 * other control characters, no backslash (a Windows server would read it as a separator).
 * `.` and empty segments are dropped. Symlinks are dealt with on the server (folder.ts).
 */
const MAX_PATH_CHARS = 4096;

/** What is wrong with a relative path, or undefined. */
export function pathProblem(path: string): string | undefined {
  if (path.length > MAX_PATH_CHARS) return `is longer than ${MAX_PATH_CHARS} characters`;
  if (path.startsWith('/')) return 'is absolute; paths are relative to the connection root';
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'holds a control character (NUL, newline…)';
  if (path.includes('\\')) return 'holds a backslash';
  if (path.split('/').includes('..')) return "holds '..'; paths may not leave the connection root";
  return undefined;
}

/** The path's segments; BAD_REQUEST when it would leave the root or, for a file, names the root itself. */
export function segmentsOf(path: string, what: string, { root }: { root: 'allowed' | 'refused' }): string[] {
  const problem = pathProblem(path);
  if (problem) throw new SvcError('BAD_REQUEST', `${what} ${JSON.stringify(path.slice(0, 200))} ${problem}`);
  const segments = path.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.length === 0 && root === 'refused') throw new SvcError('BAD_REQUEST', `${what} must name a file under the connection root`);
  return segments;
}

/** The server path of segments under a base folder (`.` is the login folder). */
export function remotePath(base: string, segments: readonly string[]): string {
  if (segments.length === 0) return base;
  if (base === '.') return segments.join('/');
  return `${base.replace(/\/+$/, '')}/${segments.join('/')}`;
}
