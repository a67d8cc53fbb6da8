#!/usr/bin/env bash
# Build argocd-lua (tools/argocd-lua/main.go: Argo CD's util/lua setup on gopher-lua, the harness of
# tests/unit/packaging/test_argocd.py) and cache it outside the repo, like tools/promtool/build.sh.
#
# Usage: bash tools/argocd-lua/build.sh
#   Last line on stdout: the path of the argocd-lua binary. Progress goes to stderr.
#
# The cache key is the pinned gopher-lua version and the first 16 hex digits of the SHA-256 of main.go, go.mod
# and go.sum concatenated in that order (test_argocd.py computes the same key to find the binary):
#   $SUNDIAL_CACHE_DIR/argocd-lua/gopher-lua-<version>-<hash>/argocd-lua
#
# Environment:
#   SUNDIAL_CACHE_DIR   cache root (default: $HOME/.cache/sundial). Go module and build caches are shared with
#                       the control plane's ($SUNDIAL_CACHE_DIR/controlplane/go/{mod,build}).
#   GO                  go binary to use (default: `go` on PATH, then /usr/local/go/bin/go).
#   BUILD_PARALLELISM   value for `go build -p` (default: number of CPUs, at most 4).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The gopher-lua version is pinned in go.mod (the one Argo CD's go.mod pins).
GOPHER_LUA_VERSION="$(awk '$1 == "github.com/yuin/gopher-lua" { print $2 }' "$here/go.mod")"
source_hash="$(cat "$here/main.go" "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)"
# Bump when this script changes in a way that must invalidate a cached binary.
BUILD_RECIPE=1

GOBUILD_NAME=argocd-lua
GOBUILD_VERSION="gopher-lua-$GOPHER_LUA_VERSION-$source_hash"
# shellcheck source=../lib/gobuild.sh
source "$here/../lib/gobuild.sh"
gobuild_begin

gobuild_dir "$here" . -ldflags "-s -w"
printf 'GOPHER_LUA_VERSION=%s\nSOURCE_HASH=%s\nBUILD_RECIPE=%s\nGO_VERSION=%s\n' \
  "$GOPHER_LUA_VERSION" "$source_hash" "$BUILD_RECIPE" "$("$GO" env GOVERSION)" > "$gobuild_stamp"
gobuild_end
