"""The image's build context: exactly the files the Dockerfile may see, their cache key, and the metadata
(version, revision, SOURCE_DATE_EPOCH) of a build.

``.dockerignore`` says the same for ``docker build`` from the repository root; a unit test
(tests/unit/packaging/test_dockerfile.py) checks that the two agree.

Usage (all print to stdout):
    python3 tools/image/context.py files           one path per line, relative to the repository
    python3 tools/image/context.py key             SHA-256 of those paths and contents
    python3 tools/image/context.py stage DIR       copy them into DIR (which must not exist)
    python3 tools/image/context.py metadata        VERSION=, REVISION=, SOURCE_DATE_EPOCH=, CREATED= lines
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Files at fixed paths.
FILES = (
    "Dockerfile",
    "LICENSE",
    "README.md",
    "pyproject.toml",
    "tools/image/build-requirements.lock",
    "tools/image/requirements.lock",
)
#: The operator's source tree, copied without what is left out below.
SOURCE_DIR = "operator/sundial"
#: Never in the image: the two commands that need the sandbox (a dev/test tool, its own distribution under
#: tools/sandbox, which is not copied at all); bytecode and build leftovers.
EXCLUDED = (
    "operator/sundial/cli/commands/sandbox.py",
    "operator/sundial/cli/commands/dev.py",
)
EXCLUDED_NAMES = ("__pycache__",)
EXCLUDED_SUFFIXES = (".pyc", ".pyo", ".egg-info")
#: Used when there is no git history (a source tarball): 2025-05-20T00:00:00Z.
FALLBACK_EPOCH = 1747699200


def _excluded(relative: str) -> bool:
    name = relative.rsplit("/", 1)[-1]
    return (
        any(relative == path or relative.startswith(path + "/") for path in EXCLUDED)
        or name in EXCLUDED_NAMES
        or name.endswith(EXCLUDED_SUFFIXES)
    )


def files(repo: Path = REPO) -> list[str]:
    """The context's files, sorted; fails if a fixed one is missing."""
    missing = [path for path in FILES if not (repo / path).is_file()]
    if missing:
        raise SystemExit(f"build context: missing {', '.join(missing)}")
    found = list(FILES)
    for directory, subdirectories, names in os.walk(repo / SOURCE_DIR):
        relative_dir = Path(directory).relative_to(repo).as_posix()
        subdirectories[:] = [d for d in subdirectories if not _excluded(f"{relative_dir}/{d}")]
        found += [f"{relative_dir}/{n}" for n in names if not _excluded(f"{relative_dir}/{n}")]
    return sorted(found)


def key(repo: Path = REPO) -> str:
    digest = hashlib.sha256()
    for path in files(repo):
        content = (repo / path).read_bytes()
        digest.update(f"{path}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


def stage(target: Path, repo: Path = REPO) -> None:
    target.mkdir(parents=True)
    for path in files(repo):
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(repo / path, destination)


def _git(repo: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else None


def metadata(repo: Path = REPO) -> dict[str, str]:
    """VERSION (pyproject's), REVISION (the last commit that changed a context file, ``-dirty`` when the
    working tree differs from it there) and SOURCE_DATE_EPOCH (that commit's time), CREATED (RFC 3339).

    The revision is the commit whose sources the image holds: a commit that changes nothing the image is
    built from gives the same image (and the same cache entry) as its parent."""
    version = str(tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])
    paths = files(repo)
    revision = _git(repo, "log", "-1", "--format=%H", "--", *paths) or "unknown"
    epoch = int(_git(repo, "log", "-1", "--format=%ct", "--", *paths) or FALLBACK_EPOCH)
    if revision != "unknown" and _git(repo, "status", "--porcelain", "--", *paths):
        revision += "-dirty"
    created = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"VERSION": version, "REVISION": revision, "SOURCE_DATE_EPOCH": str(epoch), "CREATED": created}


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else ""
    if command == "files":
        print("\n".join(files()))
    elif command == "key":
        print(key())
    elif command == "stage" and len(argv) == 3:
        stage(Path(argv[2]))
    elif command == "metadata":
        print("\n".join(f"{name}={value}" for name, value in metadata().items()))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
