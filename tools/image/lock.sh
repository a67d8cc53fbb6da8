#!/usr/bin/env bash
# Write the hash-pinned lock files the image installs from, with a pinned uv (installed into the cache by
# this script). Regenerating after a change of pyproject.toml's dependencies is this one command
# (`make lock`); tests/unit/packaging/test_lock.py fails while the lock and pyproject.toml disagree.
#
#   tools/image/requirements.lock        [project].dependencies of pyproject.toml and everything they pull
#                                        in, for CPython 3.11 on x86_64 Linux (bookworm, glibc 2.36)
#   tools/image/build-requirements.in    [build-system].requires of pyproject.toml (written here)
#   tools/image/build-requirements.lock  those (setuptools, wheel) pinned: what builds the
#                                        sundial wheel inside the image's builder stage
#
# Every version is exact and every file of it that the index has (the manylinux wheels for cp311
# x86_64 included) is listed with its SHA-256, so `pip install --require-hashes` refuses anything else.
#
# Usage: bash tools/image/lock.sh [--upgrade]     (--upgrade: newest versions of the transitive ones)
set -euo pipefail

# The one place the lock tool is pinned.
UV_VERSION=0.13.9
PYTHON_VERSION=3.11
PYTHON_PLATFORM=x86_64-manylinux_2_28

log() { printf '[lock] %s\n' "$*" >&2; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache_root="${SUNDIAL_CACHE_DIR:-${HOME:?HOME is not set}/.cache/sundial}"
tool_dir="$cache_root/image/tools/uv-$UV_VERSION"
uv="$tool_dir/bin/uv"

if [[ ! -x "$uv" ]]; then
  log "installing uv $UV_VERSION into $tool_dir"
  python3 -m venv "$tool_dir"
  "$tool_dir/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
fi

upgrade=()
if [[ "${1:-}" == "--upgrade" ]]; then upgrade=(--upgrade); fi

compile() { # OUTPUT INPUT...
  local output="$1"; shift
  (cd "$repo" && "$uv" pip compile --quiet --generate-hashes --no-strip-extras \
      --python-version "$PYTHON_VERSION" --python-platform "$PYTHON_PLATFORM" \
      --custom-compile-command "make lock" \
      "${upgrade[@]}" --output-file "$output" "$@")
  log "wrote $output"
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# [build-system].requires as a requirements file (uv reads [project] from pyproject.toml directly).
python3 - "$repo/pyproject.toml" > "$work/build-requirements.in" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as handle:
    print("\n".join(tomllib.load(handle)["build-system"]["requires"]))
PY
compile tools/image/requirements.lock pyproject.toml
cp "$work/build-requirements.in" "$repo/tools/image/build-requirements.in"
compile tools/image/build-requirements.lock tools/image/build-requirements.in
