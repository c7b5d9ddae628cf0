"""kubesched's build: the package as pyproject.toml describes it, with the scheduling hot path
compiled by mypyc where it can be (CPython with a C compiler). ``KUBESCHED_PURE_PYTHON=1`` builds
without compiling; a failed compile falls back to pure Python with a note, never a failed install.

The compiled modules are listed in ``src/kubesched/compiled.py`` (``MODULES``), which also keeps an
edited source from being shadowed by its stale compiled module (see there).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import shutil
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
SRC = ROOT / "src"
sys.path.insert(0, str(SRC / "kubesched"))
from compiled import MANIFEST, MODULES  # noqa: E402  (compiled.py imports nothing of kubesched)

sys.path.pop(0)
sys.path.insert(0, str(ROOT))
try:  # the compiled hot path kept from an earlier install of the same sources (build_cache.py)
    import build_cache
except ImportError:  # an sdist without it: every install compiles
    build_cache = None  # type: ignore[assignment]
sys.path.pop(0)


def source(module: str) -> Path:
    return SRC.joinpath(*module.split(".")).with_suffix(".py")


def remove_stale() -> None:
    """Compiled modules and their manifest from an earlier build (an editable install keeps them
    in the source tree, where they would shadow the sources)."""
    (SRC / "kubesched" / MANIFEST).unlink(missing_ok=True)
    for module in MODULES:
        for built in source(module).parent.glob(source(module).stem + ".*.so"):
            built.unlink()
    for group in SRC.glob("*__mypyc*.so"):
        group.unlink()


def write_manifest(package: Path) -> None:
    """Each compiled module's source hash, beside the compiled modules in ``package``:
    ``kubesched.compiled`` compares them at import."""
    digests = {m: hashlib.sha256(source(m).read_bytes()).hexdigest() for m in MODULES}
    package.mkdir(parents=True, exist_ok=True)
    (package / MANIFEST).write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")


class CompileHotPath(build_ext):
    """build_ext that compiles the hot path with mypyc when it can; any failure leaves a
    pure-Python install behind (said on stderr) instead of a failed one. mypyc runs here, not when
    setup.py is loaded, so pip's several calls into setup.py type-check the modules once."""

    def finalize_options(self) -> None:
        # the same sources compiled before: their compiled modules are copied, nothing compiles
        self.cache_key = cache_key()
        cache = build_cache.folder() if build_cache is not None and self.cache_key else None
        self.cached = cache is not None and (cache / self.cache_key / build_cache.FILES).is_file()
        if not self.cached:  # (cached: the stand-in stays, so that setuptools still runs this command)
            self.distribution.ext_modules = compile_plan()
        super().finalize_options()
        # one C compiler per CPU: the groups (and each module's small shim) build side by side
        self.parallel = max(1, os.cpu_count() or 1)

    def run(self) -> None:
        root = SRC if self.inplace else Path(self.build_lib)
        if self.cached:
            self.extensions = []  # the stand-in: nothing to build or to list as built
            remove_stale()
            if build_cache.restore(build_cache.folder(), self.cache_key, root) is not None:
                write_manifest(root / "kubesched")
                print("kubesched: these sources' hot path was compiled before: copied from the cache", file=sys.stderr)
            else:  # removed or unreadable since finalize_options: pure Python, said
                remove_stale()
                print("kubesched: the cached hot path could not be read; installing pure Python", file=sys.stderr)
            return
        if not self.extensions:
            return
        try:
            super().run()
        except Exception as exc:  # a compiler error: pure Python then
            print(f"kubesched: compiling the hot path failed ({exc}); installing pure Python", file=sys.stderr)
            remove_stale()
            self.extensions = []
            return
        # an editable install builds in place (the source tree); a wheel from build_lib
        write_manifest(root / "kubesched")
        if build_cache is not None and self.cache_key:
            built = [Path(self.get_ext_fullpath(e.name)) for e in self.extensions]
            build_cache.store(build_cache.folder(), self.cache_key, root, built)


def cache_key() -> str:
    """The build cache's key for this build, or "" when nothing would compile (pure Python)."""
    if build_cache is None or os.environ.get("KUBESCHED_PURE_PYTHON"):
        return ""
    if platform.python_implementation() != "CPython":
        return ""
    try:
        return build_cache.key(SRC / "kubesched")
    except OSError:
        return ""


@functools.cache
def compile_plan() -> list[Extension]:
    """mypyc's extensions for MODULES, or none (pure Python) where they cannot be built."""
    remove_stale()
    if os.environ.get("KUBESCHED_PURE_PYTHON") or platform.python_implementation() != "CPython":
        return []
    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        print("kubesched: no C compiler found; installing pure Python", file=sys.stderr)
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        return []
    try:  # the compiled modules' types name these; compiled with them unknown, the code is unsafe
        import numpy  # noqa: F401
        import prometheus_client  # noqa: F401
    except ImportError as exc:
        print(f"kubesched: {exc.name} is not in the build environment; installing pure Python", file=sys.stderr)
        return []
    paths = {m: str(source(m).relative_to(ROOT)) for m in MODULES}
    # two groups, each one C library: the scheduler's own modules, and the API and cluster below
    # them. gcc compiles the two at once (build_ext's parallel), about 4 min instead of 6.5 on a
    # 2-CPU VM for 57 modules; calls between groups go through a table, which callgrind puts at
    # under 1 % of a pod's instructions (SchedulingBasic at 10 nodes, 2026-11-28)
    scheduler = [p for m, p in paths.items() if m.startswith("kubesched.scheduler.")]
    below = [p for m, p in paths.items() if not m.startswith("kubesched.scheduler.")]
    groups = [(scheduler, "kubesched_scheduler"), (below, "kubesched")]
    try:
        # the compile type-checks these modules alone; libraries the build environment lacks are Any
        return list(mypycify(["--ignore-missing-imports", *paths.values()], opt_level="3", separate=groups))
    except (Exception, SystemExit) as exc:  # mypyc refused a module: pure Python, said
        print(f"kubesched: mypyc could not compile the hot path ({exc}); installing pure Python", file=sys.stderr)
        return []


# a stand-in, so that setuptools runs build_ext (and builds a platform wheel); CompileHotPath
# replaces it with mypyc's extensions, or with none
setup(ext_modules=[Extension("kubesched.hot_path", sources=[])], cmdclass={"build_ext": CompileHotPath})
