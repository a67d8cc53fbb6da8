#!/usr/bin/env bash
# `make release`: write everything a release ships into dist/, all of one version (pyproject.toml's):
#
#   sundial-<v>.oci.tar                the operator image (tools/image/build.sh; OCI archive)
#   sundial-<v>-py3-none-any.whl       the sundial wheel: `sundial` and the kubectl plugin `kubectl-sundial`
#   sundial-<v>.tgz                    the Helm chart (helm package; Chart.yaml must say the same version)
#   sundial-<v>.cdx.json               a CycloneDX SBOM of the image (Debian and Python packages)
#   SHA256SUMS                         sha256sum of the four above
#
# The wheel is built from the same staged sources as the image (no sandbox), with setuptools and wheel
# from tools/image/build-requirements.lock (hash-checked) and SOURCE_DATE_EPOCH from the commit.
#
# Usage: bash tools/image/release.sh      Last line on stdout: the dist/ directory.
set -euo pipefail

log() { printf '[release] %s\n' "$*" >&2; }
die() { printf '[release] ERROR: %s\n' "$*" >&2; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache_root="${SUNDIAL_CACHE_DIR:-${HOME:?HOME is not set}/.cache/sundial}"
python="${PYTHON:-python3}"
dist="$repo/dist"

eval "$("$python" "$here/context.py" metadata)"
chart="$repo/charts/sundial/Chart.yaml"
chart_version="$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$chart")"
app_version="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$chart")"
[[ "$chart_version" == "$VERSION" && "$app_version" == "$VERSION" ]] ||
  die "Chart.yaml says version $chart_version / appVersion $app_version, pyproject.toml says $VERSION"

archive="$(bash "$here/build.sh" | tail -n 1)"
# shellcheck disable=SC1091
source "$(dirname "$archive")/image.env"
helm="$(bash "$repo/tools/helm/build.sh" | tail -n 1)"

rm -rf "$dist"
mkdir -p "$dist"
cp "$archive" "$dist/sundial-$VERSION.oci.tar"

# The wheel, from the staged context, with the locked build tools in a cached virtualenv.
tools="$cache_root/image/tools/build-$(sha256sum "$repo/tools/image/build-requirements.lock" | cut -c1-16)"
if [[ ! -x "$tools/bin/pip" || ! -f "$tools/.complete" ]]; then
  log "build tools (build-requirements.lock) into $tools"
  rm -rf "$tools"
  "$python" -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check --require-hashes --no-deps \
    -r "$repo/tools/image/build-requirements.lock"
  touch "$tools/.complete"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" "$here/context.py" stage "$work/src"
SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" PYTHONHASHSEED=0 "$tools/bin/pip" wheel --quiet --disable-pip-version-check \
  --no-index --no-deps --no-build-isolation --wheel-dir "$dist" "$work/src"

"$helm" package "$repo/charts/sundial" --destination "$dist" --version "$VERSION" --app-version "$VERSION" >&2
"$python" "$here/sbom.py" "$dist/sundial-$VERSION.oci.tar" "$WHEELS" > "$dist/sundial-$VERSION.cdx.json"

(cd "$dist" && sha256sum -- * > SHA256SUMS)
log "dist/ (version $VERSION, revision $REVISION, image $DIGEST):"
sed 's/^/  /' "$dist/SHA256SUMS" >&2
printf '%s\n' "$dist"
