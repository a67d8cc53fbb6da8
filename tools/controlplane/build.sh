#!/usr/bin/env bash
# Build the local control-plane binaries (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok) from Go modules, without Docker, and cache them outside the repo.
#
# Usage: bash tools/controlplane/build.sh          # the five control-plane binaries
#        bash tools/controlplane/build.sh --node   # the real node's: kubelet and pause (docs/sandbox.md)
#   Last line on stdout: the directory holding the binaries.
#   Progress goes to stderr.
#
# Environment:
#   SUNDIAL_CACHE_DIR   cache root (default: $HOME/.cache/sundial). Binaries land in
#                       $SUNDIAL_CACHE_DIR/controlplane/<key>/bin; Go module and build caches
#                       in $SUNDIAL_CACHE_DIR/controlplane/go/{mod,build} (shared by all keys).
#   GO                  go binary to use (default: `go` on PATH, then /usr/local/go/bin/go).
#   BUILD_PARALLELISM   value for `go build -p` (default: number of CPUs, at most 4).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

log() { printf '[controlplane] %s\n' "$*" >&2; }
die() { printf '[controlplane] ERROR: %s\n' "$*" >&2; exit 1; }

: "${KUBERNETES_VERSION:?}" "${ETCD_VERSION:?}" "${KWOK_VERSION:?}" "${BUILD_RECIPE:?}"

goos_goarch() {
  local os arch
  os="$(uname -s | tr '[:upper:]' '[:lower:]')"
  case "$(uname -m)" in
    x86_64|amd64) arch=amd64 ;;
    aarch64|arm64) arch=arm64 ;;
    *) arch="$(uname -m)" ;;
  esac
  printf '%s-%s' "$os" "$arch"
}

cache_root="${SUNDIAL_CACHE_DIR:-${HOME:?HOME is not set}/.cache/sundial}/controlplane"
target=controlplane
case "${1:-}" in
  "") ;;
  --node) target=node ;;
  *) die "unknown argument ${1}; usage: build.sh [--node]" ;;
esac
if [[ $target == node ]]; then
  # kubelet from the same k8s.io/kubernetes module as the API server; pause from tools/controlplane/pause.
  pause_key="$(cat "$here/pause/go.mod" "$here/pause/main.go" | sha256sum | cut -c1-12)"
  key="node-k8s-${KUBERNETES_VERSION}_pause-${pause_key}_r${BUILD_RECIPE}_$(goos_goarch)"
  binaries=(kubelet pause)
else
  key="k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_r${BUILD_RECIPE}_$(goos_goarch)"
  binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
fi
out_dir="$cache_root/$key"
bin_dir="$out_dir/bin"

all_built() {
  local b
  for b in "${binaries[@]}"; do [[ -x "$bin_dir/$b" ]] || return 1; done
}

# Fast path: nothing to do, and no Go needed.
if all_built; then
  log "cached: $bin_dir"
  printf '%s\n' "$bin_dir"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# Go toolchain
GO="${GO:-$(command -v go || true)}"
if [[ -z "$GO" && -x /usr/local/go/bin/go ]]; then GO=/usr/local/go/bin/go; fi
[[ -n "$GO" && -x "$GO" ]] || die "no 'go' found. Install Go >= 1.26 (https://go.dev/dl/) and put it on PATH, or set GO=/path/to/go."
go_ver="$("$GO" env GOVERSION)"   # e.g. go1.26.8
go_minor="$(sed -E 's/^go1\.([0-9]+).*/\1/' <<<"$go_ver")"
[[ "$go_minor" =~ ^[0-9]+$ && "$go_minor" -ge 26 ]] \
  || die "found $go_ver at $GO; Kubernetes $KUBERNETES_VERSION needs Go >= 1.26. Install a newer Go."

export GOMODCACHE="$cache_root/go/mod"
export GOCACHE="$cache_root/go/build"
export GOTOOLCHAIN=local
export GOFLAGS="-mod=mod -modcacherw"   # -modcacherw: the cache can be deleted with rm -rf
export GOWORK=off
export CGO_ENABLED=0
jobs="${BUILD_PARALLELISM:-$(( $(nproc 2>/dev/null || echo 2) > 4 ? 4 : $(nproc 2>/dev/null || echo 2) ))}"

mkdir -p "$out_dir" "$GOMODCACHE" "$GOCACHE"
exec 9>"$out_dir/.lock"
if ! flock -n 9; then
  log "another build holds $out_dir/.lock; waiting"
  flock 9
fi
if all_built; then
  log "cached: $bin_dir"
  printf '%s\n' "$bin_dir"
  exit 0
fi
mkdir -p "$bin_dir"

# Path of the go.mod file the module proxy serves for MODULE@VERSION.
mod_file() {
  "$GO" mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p'
}

# Write a throwaway go.mod in DIR requiring MODULE@VERSION. Every local-path replace of the
# upstream go.mod (k8s staging modules, etcd siblings) becomes a replace to the published
# module: the version upstream requires, or STAGING_VERSION where upstream requires v0.0.0.
# The upstream `go` and `godebug` lines are mirrored.
write_throwaway_module() {
  local dir="$1" name="$2" module="$3" version="$4" staging_version="$5"
  local upstream
  upstream="$(mod_file "$module" "$version")"
  [[ -f "$upstream" ]] || die "could not download $module@$version"
  mkdir -p "$dir"
  awk -v name="$name" -v module="$module" -v version="$version" -v staging="$staging_version" '
    function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
    { line = $0; sub(/\/\/.*/, "", line); line = trim(line) }
    /^go [0-9]/ && gover == "" { gover = line; next }
    # godebug: single line or block
    inblock == "godebug" { if (line == ")") { inblock = "" } else if (line != "") { godebug[++ng] = line }; next }
    line ~ /^godebug \($/ { inblock = "godebug"; next }
    line ~ /^godebug / { sub(/^godebug /, "", line); godebug[++ng] = line; next }
    # require: single line or block
    inblock == "require" { if (line == ")") { inblock = "" } else if (line != "") { split(line, f, /[ \t]+/); req[f[1]] = f[2] }; next }
    line ~ /^require \($/ { inblock = "require"; next }
    line ~ /^require / { split(line, f, /[ \t]+/); req[f[2]] = f[3]; next }
    # replace: single line or block; keep only local-path replaces
    inblock == "replace" { if (line == ")") { inblock = "" } else { addrep(line) }; next }
    line ~ /^replace \($/ { inblock = "replace"; next }
    line ~ /^replace / { sub(/^replace /, "", line); addrep(line); next }
    function addrep(l,   f, n) {
      n = split(l, f, /[ \t]+/)
      if (n >= 3 && f[2] == "=>" && (f[3] ~ /^\.\.?\//)) { rep[++nr] = f[1] }
    }
    END {
      print "// Generated by tools/controlplane/build.sh; throwaway module, do not edit."
      print "module " name
      print ""
      print gover
      for (i = 1; i <= ng; i++) print "godebug " godebug[i]
      print ""
      print "require " module " " version
      print ""
      print "replace ("
      for (i = 1; i <= nr; i++) {
        m = rep[i]
        if (!(m in req)) continue          # e.g. FORBIDDEN_DEPENDENCY guards
        v = req[m]
        if (v ~ /^v0\.0\.0(-|$)/) v = staging
        print "\t" m " => " m " " v
      }
      print ")"
    }' "$upstream" > "$dir/go.mod"
  rm -f "$dir/go.sum"
}

build_one() { # DIR OUTPUT PACKAGE LDFLAGS
  local dir="$1" out="$2" pkg="$3" ldflags="$4" start
  start=$SECONDS
  log "building $out ($pkg) with -p $jobs"
  ( cd "$dir" && "$GO" build -p "$jobs" -trimpath -ldflags "$ldflags" -o "$bin_dir/.$out.tmp" "$pkg" )
  mv -f "$bin_dir/.$out.tmp" "$bin_dir/$out"
  log "built $out in $(( SECONDS - start ))s"
}

total_start=$SECONDS
work="$out_dir/work"

# --- Kubernetes ---------------------------------------------------------------------------------
k8s_ver="${KUBERNETES_VERSION#v}"                    # 1.37.2
k8s_major="${k8s_ver%%.*}"
k8s_minor="$(cut -d. -f2 <<<"$k8s_ver")"
staging_version="v0.${k8s_ver#*.}"                   # v0.37.2
build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
k8s_ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ld+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=$k8s_major -X $p.gitMinor=$k8s_minor"
  k8s_ld+=" -X $p.gitTreeState=clean -X $p.buildDate=$build_date"
done
k8s_binaries=(kube-apiserver kube-controller-manager kube-scheduler)
[[ $target == node ]] && k8s_binaries=(kubelet)
need_k8s=0
for b in "${k8s_binaries[@]}"; do [[ -x "$bin_dir/$b" ]] || need_k8s=1; done
if (( need_k8s )); then
  log "preparing k8s.io/kubernetes@$KUBERNETES_VERSION (staging modules at $staging_version)"
  write_throwaway_module "$work/kubernetes" sundial.local/controlplane/kubernetes \
    k8s.io/kubernetes "$KUBERNETES_VERSION" "$staging_version"
  for b in "${k8s_binaries[@]}"; do
    [[ -x "$bin_dir/$b" ]] || build_one "$work/kubernetes" "$b" "k8s.io/kubernetes/cmd/$b" "$k8s_ld"
  done
fi

# --- pause (the real node's pod infrastructure container) ----------------------------------------
if [[ $target == node && ! -x "$bin_dir/pause" ]]; then
  build_one "$here/pause" pause . "-s -w"
fi

# --- etcd ---------------------------------------------------------------------------------------
if [[ $target == controlplane && ! -x "$bin_dir/etcd" ]]; then
  log "preparing go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  write_throwaway_module "$work/etcd" sundial.local/controlplane/etcd \
    go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "$ETCD_VERSION"
  build_one "$work/etcd" etcd go.etcd.io/etcd/server/v3 "-s -w"
fi

# --- kwok ---------------------------------------------------------------------------------------
if [[ $target == controlplane && ! -x "$bin_dir/kwok" ]]; then
  log "preparing sigs.k8s.io/kwok@$KWOK_VERSION"
  write_throwaway_module "$work/kwok" sundial.local/controlplane/kwok \
    sigs.k8s.io/kwok "$KWOK_VERSION" "$KWOK_VERSION"
  build_one "$work/kwok" kwok sigs.k8s.io/kwok/cmd/kwok \
    "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"
fi

all_built || die "build finished but binaries are missing in $bin_dir"
{
  printf 'KUBERNETES_VERSION=%s\nETCD_VERSION=%s\nKWOK_VERSION=%s\nGO_VERSION=%s\nBUILT_AT=%s\n' \
    "$KUBERNETES_VERSION" "$ETCD_VERSION" "$KWOK_VERSION" "$go_ver" "$build_date"
} > "$out_dir/build-info.env"
log "all binaries built in $(( SECONDS - total_start ))s"
printf '%s\n' "$bin_dir"
