#!/usr/bin/env bash
# Build kube-state-metrics from its Go module and cache it outside the repo, the way tools/promtool/build.sh
# builds promtool (no prebuilt binary download). tests/e2e/test_kube_state_metrics.py runs it against the
# sandbox with config/kube-state-metrics/.
#
# `go install k8s.io/kube-state-metrics/v2@VERSION` is not used: the module proxy may not serve the version
# list, and `go mod download` plus a build inside the downloaded module (its own go.mod and go.sum) is what
# its Makefile does anyway.
#
# Usage: bash tools/kube-state-metrics/build.sh
#   Last line on stdout: the path of the kube-state-metrics binary. Progress goes to stderr.
#
# Environment:
#   SUNDIAL_CACHE_DIR   cache root (default: $HOME/.cache/sundial). The binary lands in
#                       $SUNDIAL_CACHE_DIR/kube-state-metrics/<version>/kube-state-metrics; Go module and build
#                       caches are shared with the control plane's ($SUNDIAL_CACHE_DIR/controlplane/go/{mod,build}).
#   GO                  go binary to use (default: `go` on PATH, then /usr/local/go/bin/go).
#   BUILD_PARALLELISM   value for `go build -p` (default: number of CPUs, at most 4).
set -euo pipefail

# The one place the kube-state-metrics version is pinned.
KUBE_STATE_METRICS_VERSION=v2.18.0
KUBE_STATE_METRICS_MODULE=k8s.io/kube-state-metrics/v2
# Bump when this script changes in a way that must invalidate a cached binary.
BUILD_RECIPE=1

GOBUILD_NAME=kube-state-metrics
GOBUILD_VERSION=$KUBE_STATE_METRICS_VERSION
# shellcheck source=../lib/gobuild.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/gobuild.sh"
gobuild_begin

# Like its Makefile: the version shown by `kube-state-metrics --version` and in kube_state_metrics_build_info.
ksm_go_mod="$("$GO" mod download -json "$KUBE_STATE_METRICS_MODULE@$KUBE_STATE_METRICS_VERSION" \
  | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "$ksm_go_mod" ]] || die "could not download $KUBE_STATE_METRICS_MODULE@$KUBE_STATE_METRICS_VERSION"
client_go="$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$ksm_go_mod")"
ldflags="-s -w -X github.com/prometheus/common/version.Version=$KUBE_STATE_METRICS_VERSION"
ldflags+=" -X github.com/prometheus/common/version.Branch=HEAD"
ldflags+=" -X $KUBE_STATE_METRICS_MODULE/pkg/app.ClientGoVersion=$client_go"
gobuild_module "$KUBE_STATE_METRICS_MODULE@$KUBE_STATE_METRICS_VERSION" . -tags netgo -ldflags "$ldflags"
"$gobuild_bin" version >&2
printf 'KUBE_STATE_METRICS_VERSION=%s\nBUILD_RECIPE=%s\nCLIENT_GO_VERSION=%s\nGO_VERSION=%s\n' \
  "$KUBE_STATE_METRICS_VERSION" "$BUILD_RECIPE" "$client_go" "$("$GO" env GOVERSION)" > "$gobuild_stamp"
gobuild_end
