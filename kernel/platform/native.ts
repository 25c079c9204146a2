import { createRequire } from 'node:module';

/**
 * Native modules whose releases each build against only some Node majors. package.json
 * installs every line as an optional aliased dependency (`isolated-vm-7` is `isolated-vm@7.0.1`);
 * npm builds the lines this Node can build and drops the others, and the kernel loads the line
 * picked here by the running Node's major. Why two lines of better-sqlite3: 12 aborts the
 * process on Node 24.19 and later, 13 crashes on Node 20 (docs/decisions/platform.md).
 */
export interface NativeLine {
  /** The dependency's name in package.json. */
  readonly alias: string;
  /** What it installs, for messages. */
  readonly spec: string;
  /** The lowest Node major it is used for; lines are listed newest first. */
  readonly fromMajor: number;
}

export const ISOLATED_VM_LINES: readonly NativeLine[] = [
  { alias: 'isolated-vm-7', spec: 'isolated-vm@7.0.1', fromMajor: 24 },
  { alias: 'isolated-vm-6', spec: 'isolated-vm@6.2.0', fromMajor: 22 },
  { alias: 'isolated-vm-5', spec: 'isolated-vm@5.0.4', fromMajor: 20 },
];

export const SQLITE_LINES: readonly NativeLine[] = [
  { alias: 'better-sqlite3-13', spec: 'better-sqlite3@13.2.0', fromMajor: 22 },
  { alias: 'better-sqlite3-12', spec: 'better-sqlite3@12', fromMajor: 20 },
];

export const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/** Raised at start when the running Node has no usable build: the CLI prints the message alone. */
export class NativeModuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NativeModuleError';
  }
}

const require = createRequire(import.meta.url);
const REINSTALL = 'remove node_modules and run `npm install` with the Node you start svc with (`rm -rf node_modules && npm install`)';

export function pickLine(lines: readonly NativeLine[], major = NODE_MAJOR): NativeLine {
  const line = lines.find((l) => major >= l.fromMajor);
  if (!line) {
    const lowest = lines[lines.length - 1]!;
    throw new NativeModuleError(`svc needs Node ${lowest.fromMajor} or later for ${lowest.spec.split('@')[0]}; this is Node ${process.versions.node}`);
  }
  return line;
}

/** The entry file of the line for this Node, resolved without loading it. */
export function resolveLine(lines: readonly NativeLine[], major = NODE_MAJOR): string {
  const line = pickLine(lines, major);
  try {
    return require.resolve(line.alias);
  } catch {
    throw new NativeModuleError(`Node ${process.versions.node} needs ${line.spec} (package ${line.alias}), which is not installed: node_modules was installed with another Node version, or its build failed; ${REINSTALL}`);
  }
}

/** Says why the line for this Node cannot be used: for a load that failed. */
export function unusableLine(lines: readonly NativeLine[], reason: string): NativeModuleError {
  return new NativeModuleError(`${pickLine(lines).spec} does not load on Node ${process.versions.node} (${reason}); ${REINSTALL}`);
}

/** Loads the line for this Node; for modules safe to load in the kernel process. */
export function loadLine<T>(lines: readonly NativeLine[]): T {
  const entry = resolveLine(lines);
  try {
    return require(entry) as T;
  } catch (err) {
    throw unusableLine(lines, (err as Error).message.split('\n')[0]!);
  }
}
