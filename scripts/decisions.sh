#!/usr/bin/env bash
# docs/decisions.md is assembled from docs/decisions/*.md (one file per area).
cd "$(dirname "$0")/.."
{
  echo "# Decisions"
  echo
  echo "Where the spec says \"not shown\" or is silent, what we decided, one short entry each."
  echo "One file per area under docs/decisions/; this page is their concatenation (npm run docs)."
  for f in docs/decisions/kernel.md $(ls docs/decisions/*.md | grep -v '/kernel.md$'); do
    echo
    sed -e 's/^## /### /' -e 's/^# /## /' "$f"
  done
} > docs/decisions.md
