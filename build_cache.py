"""A cache of the compiled hot path for ``setup.py``: installing again from unchanged sources
(another extra, a fresh virtualenv, a second clone) copies the modules mypyc compiled last time
instead of compiling them for minutes.

The key is a hash of every source of the package (the compile reads the modules it compiles and
the types of those they import), the interpreter's ABI, and the versions of mypy and of the
libraries whose types the compiled modules name. ``KUBESCHED_BUILD_CACHE`` names the cache's
folder (default ``~/.cache/kubesched/build``; ``off``: no cache). Nothing here can fail an
install: a cache that cannot be read or written is a miss."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

FILES = "files.json"  # written last: an entry without it is incomplete, and a miss
LIBRARIES = ("mypy", "numpy", "prometheus_client", "setuptools")


def folder() -> Path | None:
    """The cache's folder, or None when caching is off."""
    where = os.environ.get("KUBESCHED_BUILD_CACHE", "")
    if where.lower() == "off":
        return None
    if where:
        return Path(where)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubesched" / "build"


def key(package: Path) -> str:
    """The hash of every ``.py`` under ``package``, the interpreter's ABI and the libraries' versions."""
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        h.update(path.relative_to(package).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = ""
    abi = [sys.version, sysconfig.get_config_var("EXT_SUFFIX") or "", platform.machine()]
    h.update(json.dumps({"versions": versions, "abi": abi}, sort_keys=True).encode())
    return h.hexdigest()


def restore(cache: Path | None, digest: str, root: Path) -> list[Path] | None:
    """Copy the entry ``digest``'s files under ``root`` (each at its path relative to it); None
    on a miss (no entry, an incomplete one, or one that cannot be read)."""
    if cache is None:
        return None
    entry = cache / digest
    try:
        names = json.loads((entry / FILES).read_text())
        copied = []
        for name in names:
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(entry / name, target)
            copied.append(target)
        return copied
    except (OSError, ValueError, TypeError):
        return None


def store(cache: Path | None, digest: str, root: Path, files: list[Path]) -> bool:
    """Keep ``files`` (under ``root``) as the entry ``digest``; False when it could not be written."""
    if cache is None:
        return False
    with contextlib.suppress(OSError, ValueError):
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=cache))
        names = []
        for path in files:
            name = path.resolve().relative_to(root.resolve()).as_posix()
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, staging / name)
            names.append(name)
        (staging / FILES).write_text(json.dumps(names))
        entry = cache / digest
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        staging.rename(entry)
        return True
    return False
