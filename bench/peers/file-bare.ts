/**
 * The bare baseline of the file pickup bench: a plain node:fs loop in its own process that lists
 * a folder, reads each file whole (lstat first, as a careful loop would) and renames it into
 * done/, until the folder holds no more. Prints `ELAPSED <ms>` for the loop alone.
 *   node --import tsx bench/peers/file-bare.ts <folder>
 */
import { promises as fs } from 'node:fs';
import { join } from 'node:path';

const folder = process.argv[2]!;
await fs.mkdir(join(folder, 'done'), { recursive: true });
const started = performance.now();
let handled = 0;
for (;;) {
  const names = (await fs.readdir(folder)).filter((n) => n !== 'done');
  if (names.length === 0) break;
  for (const name of names) {
    const path = join(folder, name);
    const st = await fs.lstat(path);
    if (!st.isFile()) continue;
    const body = await fs.readFile(path);
    if (body.length !== st.size) throw new Error(`${name} changed`);
    await fs.rename(path, join(folder, 'done', name));
    handled++;
  }
}
console.log(`ELAPSED ${performance.now() - started} ${handled}`);
