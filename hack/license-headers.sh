#!/usr/bin/env bash
# make license: put hack/boilerplate.go.txt at the top of every tracked Go
# file that does not start with it (after a //go:build line, which must stay
# first). test/repo TestGoFilesCarryTheLicenseHeader is the check make verify
# runs; this is the fix it names.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

header="$(cat hack/boilerplate.go.txt)"
n=0
while IFS= read -r f; do
  [[ -f "$f" ]] || continue
  if grep -q 'Licensed under the Apache License, Version 2.0' "$f"; then
    continue
  fi
  tmp="$(mktemp)"
  if head -n1 "$f" | grep -q '^//go:build'; then
    # The constraint and its blank line stay first (Go reads a build
    # constraint only above any block comment).
    { head -n1 "$f"; echo; printf '%s\n\n' "$header"; tail -n +2 "$f" | sed '1{/^$/d}'; } >"$tmp"
  else
    { printf '%s\n\n' "$header"; cat "$f"; } >"$tmp"
  fi
  cat "$tmp" >"$f"
  rm -f "$tmp"
  n=$((n + 1))
done < <(git ls-files '*.go')
echo "license headers added to $n files"
