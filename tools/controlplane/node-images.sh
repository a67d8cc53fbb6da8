#!/usr/bin/env bash
# The images the sandbox's real node imports into its containerd (never pulled): the pause image (the static
# `pause` program that build.sh --node builds) and a small Debian bookworm image with a shell (the runtime
# base of tools/image/base.sh: mmdebstrap, Essential packages and python3). Both are written as OCI archives
# that `ctr images import` reads, cached outside the repo by their inputs.
#
# Usage: bash tools/controlplane/node-images.sh PAUSE_BINARY
#   Last two lines on stdout: NAME=ARCHIVE of the pause image, then of the shell image. Progress on stderr.
# Environment: SUNDIAL_CACHE_DIR (default $HOME/.cache/sundial): archives in $SUNDIAL_CACHE_DIR/node-images/.
set -euo pipefail

log() { printf '[node-images] %s\n' "$*" >&2; }
pause_binary="${1:?usage: node-images.sh PAUSE_BINARY}"
[[ -x $pause_binary ]] || { log "ERROR: $pause_binary is not an executable"; exit 1; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${SUNDIAL_CACHE_DIR:-${HOME:?HOME is not set}/.cache/sundial}/node-images"
mkdir -p "$cache"
exec 8>"$cache/.lock"
flock 8
command -v podman >/dev/null || bash "$here/../image/install-tools.sh"

save() { # IMAGE ARCHIVE
  podman save --quiet --format oci-archive -o "$2.tmp" "$1"
  mv -f "$2.tmp" "$2"
}

# --- pause ------------------------------------------------------------------------------------------
pause_key="$(cat "$pause_binary" "$here/node-images.sh" | sha256sum | cut -c1-16)"
pause_image="localhost/sundial-pause:$pause_key"
pause_archive="$cache/pause-$pause_key.oci.tar"
if [[ ! -s $pause_archive ]]; then
  log "making $pause_image"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  install -m 0755 "$pause_binary" "$work/pause"
  tar -C "$work" --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$work/rootfs.tar" pause
  podman import --quiet --change 'ENTRYPOINT ["/pause"]' --change 'USER 65535:65535' \
    "$work/rootfs.tar" "$pause_image" >/dev/null
  save "$pause_image" "$pause_archive"
fi

# --- shell (Debian bookworm) ------------------------------------------------------------------------
runtime_image="$(bash "$here/../image/base.sh" | tail -2 | head -1)"   # localhost/sundial-base:runtime-<key>
shell_image="localhost/sundial-shell:${runtime_image##*:runtime-}"
shell_archive="$cache/shell-${runtime_image##*:runtime-}.oci.tar"
if [[ ! -s $shell_archive ]]; then
  log "making $shell_image from $runtime_image"
  podman tag "$runtime_image" "$shell_image"
  save "$shell_image" "$shell_archive"
fi
printf '%s=%s\n%s=%s\n' "$pause_image" "$pause_archive" "$shell_image" "$shell_archive"
