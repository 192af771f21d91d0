#!/usr/bin/env bash
# Regenerates the golden reports under tests/golden/ deliberately. Review the diff like code:
# every number that moved is a formula that changed.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MLAPLAN:-build/mlaplan}
for spec in tests/golden/*.spec.json; do
  name=$(basename "$spec" .spec.json)
  tmp=$(mktemp -d)
  "$bin" report --spec "$spec" --out "$tmp/$name" >/dev/null
  rm -rf "tests/golden/$name"
  mkdir -p "tests/golden/$name"
  # Keep what --check reads and what a reviewer reads: the spec, the CSVs and report.md.
  cp "$tmp/$name"/spec.json "$tmp/$name"/*.csv "$tmp/$name"/report.md "tests/golden/$name/"
  rm -rf "$tmp"
  echo "regenerated tests/golden/$name"
done
