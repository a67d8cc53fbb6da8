#!/usr/bin/env bash
# Build promtool (Prometheus' rule checker and rule unit-test runner) from its Go module and cache it outside
# the repo, the way tools/helm/build.sh builds helm (no prebuilt binary download).
#
# Usage: bash tools/promtool/build.sh
#   Last line on stdout: the path of the promtool binary. Progress goes to stderr.
#
# Environment:
#   SUNDIAL_CACHE_DIR   cache root (default: $HOME/.cache/sundial). The binary lands in
#                       $SUNDIAL_CACHE_DIR/promtool/<version>/promtool; Go module and build caches are shared
#                       with the control plane's ($SUNDIAL_CACHE_DIR/controlplane/go/{mod,build}).
#   GO                  go binary to use (default: `go` on PATH, then /usr/local/go/bin/go).
#   BUILD_PARALLELISM   value for `go build -p` (default: number of CPUs, at most 4).
set -euo pipefail

# The one place the promtool version is pinned: the Go module version of Prometheus 3.16.0.
PROMETHEUS_MODULE_VERSION=v0.316.0
PROMETHEUS_VERSION=3.16.0
PROMTOOL_PACKAGE=github.com/prometheus/prometheus/cmd/promtool
# Bump when this script changes in a way that must invalidate a cached binary.
BUILD_RECIPE=2

log() { printf '[promtool] %s\n' "$*" >&2; }
die() { printf '[promtool] ERROR: %s\n' "$*" >&2; exit 1; }

cache_root="${SUNDIAL_CACHE_DIR:-${HOME:?HOME is not set}/.cache/sundial}"
out_dir="$cache_root/promtool/$PROMETHEUS_MODULE_VERSION"
promtool_bin="$out_dir/promtool"
stamp="$out_dir/build-info.env"

cached() { [[ -x "$promtool_bin" ]] && grep -qx "BUILD_RECIPE=$BUILD_RECIPE" "$stamp" 2>/dev/null; }

if cached; then
  log "cached: $promtool_bin"
  printf '%s\n' "$promtool_bin"
  exit 0
fi

GO="${GO:-$(command -v go || true)}"
if [[ -z "$GO" && -x /usr/local/go/bin/go ]]; then GO=/usr/local/go/bin/go; fi
[[ -n "$GO" && -x "$GO" ]] || die "no 'go' found: install Go and put it on PATH, or set GO=/path/to/go."

export GOMODCACHE="$cache_root/controlplane/go/mod"
export GOCACHE="$cache_root/controlplane/go/build"
export GOTOOLCHAIN=local
export GOWORK=off
export CGO_ENABLED=0
export GOBIN="$out_dir/.gobin"
nproc_="$(nproc 2>/dev/null || echo 2)"
jobs="${BUILD_PARALLELISM:-$(( nproc_ > 4 ? 4 : nproc_ ))}"

mkdir -p "$out_dir" "$GOMODCACHE" "$GOCACHE"
exec 9>"$out_dir/.lock"
if ! flock -n 9; then
  log "another build holds $out_dir/.lock; waiting"
  flock 9
fi
if cached; then
  log "cached: $promtool_bin"
  printf '%s\n' "$promtool_bin"
  exit 0
fi

start=$SECONDS
# Like Prometheus' own release builds (promu): the version shown by `promtool --version`. remove_all_sd leaves
# out every service-discovery plugin (cloud SDKs, client-go): rule checks and rule tests need none, and the
# cold build is several times shorter.
ldflags="-s -w -X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION"
ldflags+=" -X github.com/prometheus/common/version.Branch=HEAD"
log "building $PROMTOOL_PACKAGE@$PROMETHEUS_MODULE_VERSION with $("$GO" env GOVERSION), -p $jobs"
# `go install pkg@version` builds in module mode from the module's own go.mod and go.sum.
"$GO" install -p "$jobs" -trimpath -tags netgo,builtinassets,remove_all_sd \
  -ldflags "$ldflags" \
  "$PROMTOOL_PACKAGE@$PROMETHEUS_MODULE_VERSION"
mv -f "$GOBIN/promtool" "$promtool_bin"
rmdir "$GOBIN" 2>/dev/null || true
"$promtool_bin" --version >&2
printf 'PROMETHEUS_MODULE_VERSION=%s\nPROMETHEUS_VERSION=%s\nBUILD_RECIPE=%s\nGO_VERSION=%s\n' \
  "$PROMETHEUS_MODULE_VERSION" "$PROMETHEUS_VERSION" "$BUILD_RECIPE" "$("$GO" env GOVERSION)" > "$stamp"
log "built in $(( SECONDS - start ))s"
printf '%s\n' "$promtool_bin"
