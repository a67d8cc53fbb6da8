# shellcheck shell=bash
# Build one binary of a Go module once and cache it outside the repo, keyed by the module's version: the part
# the single-binary tools/*/build.sh scripts share (sourced by them, never run on its own).
#
# The sourcing script (under `set -euo pipefail`) sets
#   GOBUILD_NAME      the binary's name, its cache folder and the log prefix (e.g. helm)
#   GOBUILD_VERSION   the Go module version the cached binary is keyed by (e.g. v3.22.0)
#   BUILD_RECIPE      bumped when the script changes in a way that must invalidate a cached binary
# and then calls, in this order:
#   gobuild_begin                the fast path: when $gobuild_bin is built with this BUILD_RECIPE, print its path
#                                (the last line on stdout) and exit 0. Otherwise find Go ($GO), export the Go
#                                environment, take the build lock (and look at the cache again once it holds it)
#                                and start the clock.
#   gobuild_install FLAG... PACKAGE@VERSION
#                                `go install -p $jobs -trimpath FLAG... PACKAGE@VERSION`, the binary moved to
#                                $gobuild_bin.
#   gobuild_module MODULE@VERSION PACKAGE FLAG...
#                                instead of gobuild_install, for a module whose go.mod has directives that
#                                `go install pkg@version` refuses (or whose version list the proxy does not
#                                serve): `go mod download` MODULE@VERSION, then `go build` PACKAGE (relative to
#                                the module, e.g. `.`) inside the downloaded (read-only) module directory, from
#                                its own go.mod and go.sum, into $gobuild_bin. Sets $gobuild_module_dir.
#   gobuild_dir DIR PACKAGE FLAG...
#                                `go build` PACKAGE of the main module in DIR (a module of this repo, e.g.
#                                tools/argocd-lua) into $gobuild_bin.
#   gobuild_end                  once the script has written $gobuild_stamp (it must hold the line
#                                BUILD_RECIPE=$BUILD_RECIPE): log the build time, print $gobuild_bin.
#
# Cache: $SUNDIAL_CACHE_DIR (default $HOME/.cache/sundial)/$GOBUILD_NAME/$GOBUILD_VERSION/$GOBUILD_NAME, next to
# build-info.env (the stamp) and .lock. The Go module and build caches are the control plane's
# ($SUNDIAL_CACHE_DIR/controlplane/go/{mod,build}). Environment: GO, BUILD_PARALLELISM (see the scripts' heads).

: "${GOBUILD_NAME:?}" "${GOBUILD_VERSION:?}" "${BUILD_RECIPE:?}"

log() { printf '[%s] %s\n' "$GOBUILD_NAME" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$GOBUILD_NAME" "$*" >&2; exit 1; }

cache_root="${SUNDIAL_CACHE_DIR:-${HOME:?HOME is not set}/.cache/sundial}"
out_dir="$cache_root/$GOBUILD_NAME/$GOBUILD_VERSION"
gobuild_bin="$out_dir/$GOBUILD_NAME"
gobuild_stamp="$out_dir/build-info.env"

_gobuild_cached() { [[ -x "$gobuild_bin" ]] && grep -qx "BUILD_RECIPE=$BUILD_RECIPE" "$gobuild_stamp" 2>/dev/null; }

_gobuild_exit_if_cached() {
  if _gobuild_cached; then
    log "cached: $gobuild_bin"
    printf '%s\n' "$gobuild_bin"
    exit 0
  fi
}

gobuild_begin() {
  _gobuild_exit_if_cached

  GO="${GO:-$(command -v go || true)}"
  if [[ -z "$GO" && -x /usr/local/go/bin/go ]]; then GO=/usr/local/go/bin/go; fi
  [[ -n "$GO" && -x "$GO" ]] || die "no 'go' found: install Go and put it on PATH, or set GO=/path/to/go."

  export GOMODCACHE="$cache_root/controlplane/go/mod"
  export GOCACHE="$cache_root/controlplane/go/build"
  export GOTOOLCHAIN=local
  export GOWORK=off
  export CGO_ENABLED=0
  export GOBIN="$out_dir/.gobin"
  local nproc_
  nproc_="$(nproc 2>/dev/null || echo 2)"
  jobs="${BUILD_PARALLELISM:-$(( nproc_ > 4 ? 4 : nproc_ ))}"

  mkdir -p "$out_dir" "$GOMODCACHE" "$GOCACHE"
  exec 9>"$out_dir/.lock"
  if ! flock -n 9; then
    log "another build holds $out_dir/.lock; waiting"
    flock 9
  fi
  _gobuild_exit_if_cached

  gobuild_start=$SECONDS
}

gobuild_install() {
  local target="${*: -1}"
  log "building $target with $("$GO" env GOVERSION), -p $jobs"
  # `go install pkg@version` builds in module mode from the module's own go.mod and go.sum.
  "$GO" install -p "$jobs" -trimpath "$@"
  mv -f "$GOBIN/$GOBUILD_NAME" "$gobuild_bin"
  rmdir "$GOBIN" 2>/dev/null || true
}

gobuild_module() {
  local module="$1" package="$2"
  shift 2
  gobuild_module_dir="$("$GO" mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -f "$gobuild_module_dir/go.mod" ]] || die "could not download $module"
  gobuild_dir "$gobuild_module_dir" "$package" "$@"
}

gobuild_dir() {
  local dir="$1" package="$2"
  shift 2
  log "building $package in $dir with $("$GO" env GOVERSION), -p $jobs"
  (cd "$dir" && "$GO" build -p "$jobs" -trimpath -mod=readonly "$@" -o "$gobuild_bin.tmp" "$package")
  mv -f "$gobuild_bin.tmp" "$gobuild_bin"
}

gobuild_end() {
  log "built in $(( SECONDS - gobuild_start ))s"
  printf '%s\n' "$gobuild_bin"
}
