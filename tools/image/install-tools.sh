#!/usr/bin/env bash
# Install the Debian packages that `make image` needs: mmdebstrap (the base root file system), podman and
# buildah (the build), runc (podman's runtime here: crun cannot run on cgroup-v1 "hybrid" hosts), skopeo
# and umoci (inspecting and copying OCI images). Idempotent: nothing happens when every tool is there.
#
# Usage: bash tools/image/install-tools.sh        (as root, or with sudo available)
set -euo pipefail

log() { printf '[image-tools] %s\n' "$*" >&2; }

# command -> Debian package (bookworm)
declare -A PACKAGES=(
  [mmdebstrap]=mmdebstrap
  [podman]=podman
  [buildah]=buildah
  [runc]=runc
  [skopeo]=skopeo
  [umoci]=umoci
)

missing=()
for command in "${!PACKAGES[@]}"; do
  if ! command -v "$command" >/dev/null 2>&1 && [[ ! -x "/usr/sbin/$command" ]]; then
    missing+=("${PACKAGES[$command]}")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=()
if [[ "$(id -u)" != 0 ]]; then
  command -v sudo >/dev/null 2>&1 || { log "need root (or sudo) to install: ${missing[*]}"; exit 1; }
  sudo=(sudo)
fi
mapfile -t sorted < <(printf '%s\n' "${missing[@]}" | sort -u)
log "installing ${sorted[*]} (apt-get)"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
# uidmap (newuidmap) and fuse-overlayfs/slirp4netns are podman's usual companions; the recommends are skipped.
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${sorted[@]}" uidmap >/dev/null
log "installed: ${sorted[*]}"
