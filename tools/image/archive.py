"""Rewrite an OCI archive (a tar of an OCI image layout) so that its bytes depend only on its content:
entries sorted by name, every mtime set to SOURCE_DATE_EPOCH, owner root:root, plain ustar headers.
skopeo writes the same blobs each time but stamps the tar entries with the time of the copy.

Usage: python3 tools/image/archive.py ARCHIVE EPOCH      (rewrites ARCHIVE in place)
"""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path


def normalize(path: Path, epoch: int) -> None:
    target = path.with_name(path.name + ".normalized")
    with tarfile.open(path) as source, tarfile.open(target, "w", format=tarfile.USTAR_FORMAT) as out:
        for member in sorted(source.getmembers(), key=lambda m: m.name):
            member.mtime = epoch
            member.uid = member.gid = 0
            member.uname = member.gname = "root"
            member.mode = 0o755 if member.isdir() else 0o644
            out.addfile(member, source.extractfile(member) if member.isfile() else None)
    target.replace(path)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    normalize(Path(argv[1]), int(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
