#!/usr/bin/env bash
# Fail when a copy of the CRDs differs from the single source in crds/ (see tools/sync-chart-crds.sh).
#
# Usage: bash tools/check-crds.sh      (exit 0: in sync; exit 1: drift, with the differing files)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

targets=(charts/sundial/files/crds config/crd/bases)
status=0
for target in "${targets[@]}"; do
  if ! diff -r -q crds "$target" >&2; then
    echo "check-crds: $target/ differs from crds/" >&2
    status=1
  fi
done
if (( status )); then
  echo "check-crds: run 'bash tools/sync-chart-crds.sh' and commit the copies" >&2
else
  echo "check-crds: ${targets[*]} match crds/" >&2
fi
exit "$status"
