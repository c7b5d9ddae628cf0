"""The build cache of the compiled hot path (``build_cache.py``, used by ``setup.py``): an entry is
found only for the same sources, interpreter and libraries, restores the files where they were,
and a cache that is off, missing or half written is a miss, never an error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import build_cache

sys.path.pop(0)


def package(root: Path, **sources: str) -> Path:
    pkg = root / "pkg"
    for name, text in sources.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return pkg


def test_the_key_follows_every_source(tmp_path: Path) -> None:
    pkg = package(tmp_path, **{"a.py": "x = 1\n", "sub/b.py": "y = 2\n"})
    first = build_cache.key(pkg)
    assert build_cache.key(pkg) == first
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "a.cpython-311.pyc.py").write_text("ignored")
    assert build_cache.key(pkg) == first
    (pkg / "sub" / "b.py").write_text("y = 3\n")  # a module that is not compiled still counts
    assert build_cache.key(pkg) != first


def test_a_stored_entry_restores_the_files_where_they_were(tmp_path: Path) -> None:
    built = tmp_path / "src"
    files = [built / "pkg" / "mod.cpython-311-x86_64-linux-gnu.so", built / "pkg__mypyc.cpython-311.so"]
    for i, f in enumerate(files):
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(bytes([i]) * 10)
    cache = tmp_path / "cache"
    assert build_cache.store(cache, "k1", built, files)
    elsewhere = tmp_path / "clone" / "src"
    restored = build_cache.restore(cache, "k1", elsewhere)
    assert restored == [elsewhere / f.relative_to(built) for f in files]
    assert [p.read_bytes() for p in restored] == [f.read_bytes() for f in files]
    assert build_cache.restore(cache, "another", elsewhere) is None


def test_a_half_written_entry_is_a_miss(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "k1").mkdir(parents=True)
    (cache / "k1" / "mod.so").write_bytes(b"\0")  # no files.json: the store never finished
    assert build_cache.restore(cache, "k1", tmp_path / "src") is None


@pytest.mark.parametrize(("setting", "expected"), [("off", None), ("OFF", None), ("/x/y", Path("/x/y"))])
def test_the_folder_is_set_by_the_environment(monkeypatch, setting: str, expected: Path | None) -> None:
    monkeypatch.setenv("KUBESCHED_BUILD_CACHE", setting)
    assert build_cache.folder() == expected
    assert build_cache.store(None, "k", Path("."), []) is False
