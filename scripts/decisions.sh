#!/usr/bin/env bash
# docs/decisions.md is assembled from docs/decisions/*.md (one file per area).
cd "$(dirname "$0")/.."
{
  echo "# Decisions"
  echo
  echo "Where the spec says \"not shown\" or is silent, what we decided, one short entry each. Areas: one file each under docs/decisions/; this page is their concatenation (\`npm run docs\`)."
  for f in docs/decisions/kernel.md $(ls docs/decisions/*.md | grep -v kernel.md); do echo; cat "$f"; done
} > docs/decisions.md
