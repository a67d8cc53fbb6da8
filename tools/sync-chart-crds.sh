#!/usr/bin/env bash
# Copy the CRDs from their single source, crds/, to the places that must carry a copy:
#   charts/sundial/files/crds/   (the Helm chart renders them behind crds.enabled / crds.keep)
#   config/crd/bases/            (kustomize does not load files outside a kustomization's folder)
# tools/check-crds.sh (run by `make check-crds` and `make test`) fails when a copy drifts.
#
# Usage: bash tools/sync-chart-crds.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

targets=(charts/sundial/files/crds config/crd/bases)
shopt -s nullglob
sources=(crds/*.yaml)
(( ${#sources[@]} )) || { echo "sync-chart-crds: no CRDs in crds/" >&2; exit 1; }

for target in "${targets[@]}"; do
  mkdir -p "$target"
  # Remove copies whose source is gone.
  for copy in "$target"/*.yaml; do
    [[ -f "crds/$(basename "$copy")" ]] || { rm -f "$copy"; echo "sync-chart-crds: removed $copy"; }
  done
  for source in "${sources[@]}"; do
    if ! cmp -s "$source" "$target/$(basename "$source")"; then
      cp "$source" "$target/"
      echo "sync-chart-crds: updated $target/$(basename "$source")"
    fi
  done
done
