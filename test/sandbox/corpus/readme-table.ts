/**
 * Prints the case tables of test/sandbox/README.md from the corpus files:
 *   npx tsx test/sandbox/corpus/readme-table.ts
 * (README.md keeps its text above the tables; corpus.test.ts checks every case file is listed.)
 */
import { escapes } from './escapes.ts';
import { output } from './output.ts';
import { thenables } from './thenables.ts';
import { tampering } from './tampering.ts';
import { hostcalls } from './hostcalls.ts';
import { limits } from './limits.ts';
import { deploy } from './deploy.ts';
import { crashes } from './crashes.ts';
import type { CorpusCase, Expectation } from './types.ts';

const themes: Array<[string, CorpusCase[]]> = [['escapes', escapes], ['output', output], ['thenables', thenables], ['tampering', tampering], ['hostcalls', hostcalls], ['limits', limits], ['deploy', deploy], ['crashes', crashes]];
const esc = (s: string) => s.replace(/\|/g, '\\|');
function exp(e: Expectation): string {
  const st = Array.isArray(e.status) ? [...e.status].sort().join(' or ') : String(e.status);
  let d = '';
  if (e.details !== undefined) d = typeof e.details === 'string' ? ` \`${e.details}\`` : e.details.source.startsWith('^(Internal') ? ' `Internal server error` (or details naming the header/status)' : e.details.source.startsWith('^(Service sandbox') ? '@@CRASH' : ` details ~ \`${String(e.details)}\``;
  const head = d === '@@CRASH' ? '503 `Service sandbox crashed and was restarted` or 500 `Service exceeded its memory limit`' : `${st}${d}`;
  return `${head}${e.withinMs ? ` within ${e.withinMs} ms` : ''}`;
}
let n = 0;
for (const [theme, cases] of themes) {
  console.log(`\n### ${theme} (${cases.length})\n`);
  console.log('| # | file | case | expected |');
  console.log('|---|---|---|---|');
  for (const c of cases) {
    n++;
    const parts = [];
    if (c.hotDeploy) parts.push(`deploy refused within ${c.hotDeploy.withinMs} ms${c.hotDeploy.error.source === '.' ? '' : ` (error ~ \`${String(c.hotDeploy.error)}\`)`}, server still serving; the channel answers`);
    parts.push(exp(c.expect));
    if (c.transport === 'socket') parts.push('(real socket)');
    if (c.note) parts.push('— ' + c.note);
    if (c.expect.maxLogLines !== undefined) parts.push(`— at most ${c.expect.maxLogLines} log lines with its CID`);
    if (c.alongside) parts.push(`— concurrent call: ${exp(c.alongside.expect)}`);
    if (c.expect.next && !c.note?.includes('next call') && !c.note?.includes('second call')) parts.push(`— next call: ${exp(c.expect.next.expect)}`);
    console.log(`| ${n} | \`${c.file}\` | ${esc(c.name)} | ${esc(parts.join(' '))} |`);
  }
}
console.error(`${n} cases`);
