import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isolatedVmEntry } from '../../../kernel/sandbox/ivm.ts';

export type StandInMode = 'echo' | 'isolate';

let dir: string | undefined;

/**
 * The file SVC_SANDBOX_PROGRAM names for a stand-in (standin.mjs): a two-line program written
 * into a temp dir, removed when this process exits. The isolate stand-in is handed the
 * isolated-vm the kernel itself picks for this Node (kernel/sandbox/ivm.ts), since sandbox
 * processes run plain JavaScript and could not ask the kernel's TypeScript which line that is.
 */
export function standInProgram(mode: StandInMode): string {
  if (!dir) {
    dir = mkdtempSync(join(tmpdir(), 'svc-standin-'));
    process.once('exit', removeStandInPrograms);
  }
  const file = join(dir, `${mode}.mjs`);
  const entry = mode === 'isolate' ? isolatedVmEntry() : undefined;
  writeFileSync(file, `import { standIn } from ${JSON.stringify(new URL('./standin.mjs', import.meta.url).href)};\nstandIn(${JSON.stringify(mode)}, ${JSON.stringify(entry)});\n`);
  return file;
}

/** Removes the programs written so far (a test worker may end without its process's exit event). */
export function removeStandInPrograms(): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
}
