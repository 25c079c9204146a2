// A line diff for the Dashboard's deploy history: the longest common subsequence of two texts'
// lines, as a list of `[kind, line]` with kind ' ' (both), '-' (only in the older) or '+' (only in
// the newer). Quadratic in lines, so services past MAX_LINES are compared as wholes.

export const MAX_LINES = 4000;

/** `[kind, line]` pairs from `before` to `after`. */
export function lineDiff(before, after) {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length > MAX_LINES || b.length > MAX_LINES) return [...a.map((l) => ['-', l]), ...b.map((l) => ['+', l])];
  // Common lines at both ends need no table.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const n = endA - start;
  const m = endB - start;
  // lcs[i][j]: the longest common subsequence of a[start+i..endA) and b[start+j..endB).
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[start + i] === b[start + j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = a.slice(0, start).map((l) => [' ', l]);
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[start + i] === b[start + j]) {
      out.push([' ', a[start + i]]);
      i++;
      j++;
      // On a tie the older line goes first: a changed line reads as its old text, then its new.
    } else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) out.push(['-', a[start + i++]]);
    else out.push(['+', b[start + j++]]);
  }
  for (const l of a.slice(endA)) out.push([' ', l]);
  return out;
}
