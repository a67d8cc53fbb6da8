#!/usr/bin/env bash
# `make image`: build the operator image without a Docker engine and write it as an OCI archive.
#
#   1. tools/image/install-tools.sh  podman, buildah, mmdebstrap, runc, skopeo, umoci (apt-get, once)
#   2. tools/image/base.sh           the bookworm bases (mmdebstrap, cached by their recipe)
#   3. the locked wheels             downloaded once per lock into the cache, every SHA-256 checked
#   4. podman build                  the Dockerfile, from a staged context (tools/image/context.py),
#                                    with no network, SOURCE_DATE_EPOCH and --timestamp from the commit
#   5. skopeo copy                   an OCI archive, cached by the context's and bases' hashes
#
# Usage: bash tools/image/build.sh [--no-cache]
#   Last line on stdout: the path of the OCI archive. Progress on stderr. Next to the archive,
#   image.env holds IMAGE (name:tag in podman's storage), DIGEST (the manifest's), VERSION, REVISION.
#   --no-cache rebuilds even when the archive for this key exists (to compare digests).
#
# Environment: SUNDIAL_CACHE_DIR (default $HOME/.cache/sundial); everything lands in its image/.
set -euo pipefail

log() { printf '[image] %s\n' "$*" >&2; }
die() { printf '[image] ERROR: %s\n' "$*" >&2; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache_root="${SUNDIAL_CACHE_DIR:-${HOME:?HOME is not set}/.cache/sundial}"
python="${PYTHON:-python3}"
# Bump when this script changes in a way that must invalidate cached images.
BUILD_RECIPE=1
no_cache=0
[[ "${1:-}" == "--no-cache" ]] && no_cache=1

start=$SECONDS
bash "$here/install-tools.sh"
mapfile -t bases < <(bash "$here/base.sh" | tail -n 2)
runtime_base="${bases[0]}" builder_base="${bases[1]}"

# Version, revision and time of the sources; the key covers the context, the bases and this recipe.
eval "$("$python" "$here/context.py" metadata)"
context_key="$("$python" "$here/context.py" key)"
key="$(printf '%s\n' "$context_key" "$runtime_base" "$builder_base" "$VERSION" "$REVISION" \
        "$SOURCE_DATE_EPOCH" "$BUILD_RECIPE" "$(sha256sum "$here/build.sh")" | sha256sum | cut -c1-16)"
out_dir="$cache_root/image/sundial-$key"
archive="$out_dir/sundial-$VERSION.oci.tar"
image="localhost/sundial:$VERSION-$key"

mkdir -p "$out_dir"
exec 9>"$out_dir/.lock"
flock 9
if [[ -s "$archive" && -s "$out_dir/image.env" && "$no_cache" == 0 ]]; then
  log "cached: $archive"
  touch "$out_dir"   # in use (older unused builds are pruned below)
  printf '%s\n' "$archive"
  exit 0
fi

# The wheels of both locks, downloaded once per lock content (pip checks each file's hash).
locks=("$repo/tools/image/build-requirements.lock" "$repo/tools/image/requirements.lock")
wheels="$cache_root/image/wheels-$(cat "${locks[@]}" | sha256sum | cut -c1-16)"
if [[ ! -f "$wheels/.complete" ]]; then
  log "downloading the locked wheels into $wheels"
  mkdir -p "$wheels"
  # Bookworm's glibc is 2.36: every manylinux tag up to it (pip does not widen --platform by itself).
  platforms=()
  for minor in $(seq 36 -1 17); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
  platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
  for lock in "${locks[@]}"; do
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
      --only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 --abi abi3 --abi none \
      "${platforms[@]}" --dest "$wheels" -r "$lock"
  done
  touch "$wheels/.complete"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" "$here/context.py" stage "$work/context"
cp -a "$wheels" "$work/context/wheels"
rm -f "$work/context/wheels/.complete"

log "podman build $image (revision $REVISION, SOURCE_DATE_EPOCH $SOURCE_DATE_EPOCH)"
build_start=$SECONDS
podman --runtime /usr/sbin/runc build \
  --quiet \
  --pull=never \
  --network=none \
  --format=oci \
  --layers=false \
  --no-cache \
  --timestamp="$SOURCE_DATE_EPOCH" \
  --identity-label=false \
  --omit-history \
  --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
  --build-arg BUILDER_BASE="$builder_base" \
  --build-arg RUNTIME_BASE="$runtime_base" \
  --build-arg SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" \
  --build-arg VERSION="$VERSION" \
  --build-arg REVISION="$REVISION" \
  --build-arg CREATED="$CREATED" \
  --tag "$image" \
  --file "$work/context/Dockerfile" \
  "$work/context" >/dev/null
log "built in $((SECONDS - build_start)) s"

# The archive names the image localhost/sundial:<version> (what `podman load` / `kind load` call it).
rm -f "$archive.tmp"
skopeo copy --quiet "containers-storage:$image" "oci-archive:$archive.tmp:localhost/sundial:$VERSION" 2>/dev/null
"$python" "$here/archive.py" "$archive.tmp" "$SOURCE_DATE_EPOCH"   # fixed entry times: the same bytes each build
mv -f "$archive.tmp" "$archive"
digest="$(skopeo inspect --format '{{.Digest}}' "oci-archive:$archive")"
size="$(podman image inspect --format '{{.Size}}' "$image")"
cat > "$out_dir/image.env" <<ENV
IMAGE=$image
DIGEST=$digest
VERSION=$VERSION
REVISION=$REVISION
SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH
SIZE=$size
WHEELS=$wheels
ENV
log "image $image digest $digest, $((size / 1000000)) MB unpacked, $((SECONDS - start)) s in all"

# Builds unused for a week (archives and their podman tags) only fill the disk. Never forced: an image
# a container still uses stays.
find "$cache_root/image" -maxdepth 1 -name 'sundial-*' -type d -mtime +7 -print | while read -r dir; do
  old_key="${dir##*/sundial-}"
  podman images --format '{{.Repository}}:{{.Tag}}' | grep -- "-$old_key\$" | xargs -r podman rmi >/dev/null 2>&1 || true
  rm -rf "$dir"
done
printf '%s\n' "$archive"
