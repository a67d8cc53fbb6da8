#!/usr/bin/env bash
# Build the helm CLI from its Go module and cache it outside the repo (no prebuilt binary download).
#
# Usage: bash tools/helm/build.sh
#   Last line on stdout: the path of the helm binary. Progress goes to stderr.
#
# Environment:
#   SUNDIAL_CACHE_DIR   cache root (default: $HOME/.cache/sundial). The binary lands in
#                       $SUNDIAL_CACHE_DIR/helm/<version>/helm; Go module and build caches are shared
#                       with the control plane's ($SUNDIAL_CACHE_DIR/controlplane/go/{mod,build}).
#   GO                  go binary to use (default: `go` on PATH, then /usr/local/go/bin/go).
#   BUILD_PARALLELISM   value for `go build -p` (default: number of CPUs, at most 4).
set -euo pipefail

# The one place the helm version is pinned.
HELM_VERSION=v3.22.0
HELM_PACKAGE=helm.sh/helm/v3/cmd/helm
# Bump when this script changes in a way that must invalidate a cached binary.
BUILD_RECIPE=2

GOBUILD_NAME=helm
GOBUILD_VERSION=$HELM_VERSION
# shellcheck source=../lib/gobuild.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/gobuild.sh"
gobuild_begin

# Like helm's own Makefile: the default Kubernetes version of `helm template` / `helm lint` is the minor
# version of the k8s.io/client-go that helm is built with (without it helm assumes v1.20).
go_mod="$("$GO" mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "$go_mod" ]] || die "could not download helm.sh/helm/v3@$HELM_VERSION"
client_go="$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$go_mod")"   # e.g. v0.37.0
k8s_minor="$(cut -d. -f2 <<<"$client_go")"
[[ "$k8s_minor" =~ ^[0-9]+$ ]] || die "cannot read the k8s.io/client-go version from $go_mod"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
gobuild_install -ldflags "$ldflags" "$HELM_PACKAGE@$HELM_VERSION"
"$gobuild_bin" version --short >&2
printf 'HELM_VERSION=%s\nBUILD_RECIPE=%s\nKUBERNETES_MINOR=%s\nGO_VERSION=%s\n' \
  "$HELM_VERSION" "$BUILD_RECIPE" "$k8s_minor" "$("$GO" env GOVERSION)" > "$gobuild_stamp"
gobuild_end
