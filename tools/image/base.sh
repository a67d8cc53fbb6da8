#!/usr/bin/env bash
# Make the Debian bookworm root file systems the image is built on, with mmdebstrap (no registry image), and
# import them into podman's local storage. Cached outside the repo, keyed by this script's own content.
#
# Usage: bash tools/image/base.sh
#   Last two lines on stdout: the runtime base's image name, then the builder base's. Progress on stderr.
#
#   runtime  python3 (bookworm's: 3.11, the minor version CI runs), nothing else: no apt, no pip, no
#            compilers; the user and group 65532 (sundial) in /etc/passwd and /etc/group.
#   builder  the same plus python3-venv (pip and setuptools wheels for a virtualenv); never shipped.
#
# Both are --variant=essential (dpkg's Essential set, no apt), with /usr merged by mmdebstrap's own hook
# (not the usrmerge package, which would pull in perl), without documentation except copyright files,
# without man pages or translations. With SOURCE_DATE_EPOCH fixed (BASE_EPOCH below) mmdebstrap's
# output is bit-for-bit reproducible for the same mirror content; the Debian archive changes with point
# releases and security updates, so the tar made first is what later builds reuse (the cache), and a
# recipe change (this file) makes a new one.
#
# Environment: SUNDIAL_CACHE_DIR (default $HOME/.cache/sundial): the tars land in
#   $SUNDIAL_CACHE_DIR/image/base-<key>/{runtime,builder}.tar
set -euo pipefail

SUITE=bookworm
# A fixed time for every file of the base (2025-05-20T00:00:00Z, the archive snapshot this was made for).
BASE_EPOCH=1747699200
RUNTIME_PACKAGES=python3
BUILDER_PACKAGES=python3,python3-venv
# The user the operator runs as (the chart's runAsUser/runAsGroup).
APP_UID=65532

log() { printf '[image-base] %s\n' "$*" >&2; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache_root="${SUNDIAL_CACHE_DIR:-${HOME:?HOME is not set}/.cache/sundial}"
key="$(sha256sum "$here/base.sh" | cut -c1-16)"
out_dir="$cache_root/image/base-$key"
runtime_image="localhost/sundial-base:runtime-$key"
builder_image="localhost/sundial-base:builder-$key"

mkdir -p "$out_dir"
exec 8>"$out_dir/.lock"
flock 8

make_tar() { # NAME PACKAGES
  local name="$1" packages="$2" tar="$out_dir/$1.tar"
  if [[ -s "$tar" ]]; then
    log "cached: $tar"
    return
  fi
  log "mmdebstrap $SUITE ($name: $packages)"
  local start=$SECONDS
  SOURCE_DATE_EPOCH="$BASE_EPOCH" mmdebstrap \
    --quiet \
    --variant=essential \
    --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --include="$packages" \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --customize-hook='rm -f "$1"/etc/resolv.conf "$1"/etc/hostname' \
    --customize-hook='rm -rf "$1"/var/cache/apt "$1"/var/lib/apt/lists "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old' \
    --customize-hook="echo 'sundial:x:$APP_UID:$APP_UID:sundial:/nonexistent:/usr/sbin/nologin' >> \"\$1\"/etc/passwd" \
    --customize-hook="echo 'sundial:x:$APP_UID:' >> \"\$1\"/etc/group" \
    "$SUITE" "$tar.tmp"
  mv -f "$tar.tmp" "$tar"
  log "made $tar ($(du -h "$tar" | cut -f1)) in $((SECONDS - start)) s"
}

import() { # NAME IMAGE
  local tar="$out_dir/$1.tar" image="$2"
  if podman image exists "$image"; then
    return
  fi
  log "podman import $tar -> $image"
  podman import --quiet "$tar" "$image" >/dev/null
}

make_tar runtime "$RUNTIME_PACKAGES"
make_tar builder "$BUILDER_PACKAGES"
import runtime "$runtime_image"
import builder "$builder_image"
printf '%s\n%s\n' "$runtime_image" "$builder_image"
