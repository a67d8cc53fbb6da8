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

GOBUILD_NAME=promtool
GOBUILD_VERSION=$PROMETHEUS_MODULE_VERSION
# shellcheck source=../lib/gobuild.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/gobuild.sh"
gobuild_begin

# Like Prometheus' own release builds (promu): the version shown by `promtool --version`. remove_all_sd leaves
# out every service-discovery plugin (cloud SDKs, client-go): rule checks and rule tests need none, and the
# cold build is several times shorter.
ldflags="-s -w -X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION"
ldflags+=" -X github.com/prometheus/common/version.Branch=HEAD"
gobuild_install -tags netgo,builtinassets,remove_all_sd -ldflags "$ldflags" \
  "$PROMTOOL_PACKAGE@$PROMETHEUS_MODULE_VERSION"
"$gobuild_bin" --version >&2
printf 'PROMETHEUS_MODULE_VERSION=%s\nPROMETHEUS_VERSION=%s\nBUILD_RECIPE=%s\nGO_VERSION=%s\n' \
  "$PROMETHEUS_MODULE_VERSION" "$PROMETHEUS_VERSION" "$BUILD_RECIPE" "$("$GO" env GOVERSION)" > "$gobuild_stamp"
gobuild_end
