"""The hot path compiled by mypyc (setup.py, ``kubesched.compiled``) and the pure-Python path
kept beside it: an install with a C compiler compiles, both paths place the same pods with the
same messages, ``KUBESCHED_PURE_PYTHON`` and an edited source switch every compiled module back
to its source together, and the scheduler's core tests pass on the pure-Python path too (the
rest of the suite runs on whichever path the install gave)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import kubesched
from kubesched import compiled

ROOT = Path(__file__).resolve().parents[1]
KUBESCHED = [sys.executable, "-m", "kubesched.cli"]
# the scheduler's own tests, run again on the pure-Python path
CORE = [
    "tests/test_framework.py",
    "tests/test_plugins_fit.py",
    "tests/test_plugins_node.py",
    "tests/test_queue_cache.py",
    "tests/test_preemption.py",
    "tests/test_shape_cache.py",
    "tests/test_template_memo.py",
    "tests/test_scoring_reference.py",
    "tests/test_binding.py",
]


def pure_env() -> dict[str, str]:
    return {**os.environ, "KUBESCHED_PURE_PYTHON": "1"}


def test_an_install_with_a_c_compiler_compiles_the_hot_path() -> None:
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        assert compiled.state.startswith("pure Python")
        return
    assert (Path(kubesched.__file__).parent / compiled.MANIFEST).exists(), (
        "pip install -e . did not compile the hot path (see its output; KUBESCHED_PURE_PYTHON at install skips it)"
    )
    if os.environ.get("KUBESCHED_PURE_PYTHON"):
        assert compiled.state == "pure Python: KUBESCHED_PURE_PYTHON is set"
    elif compiled.state != "compiled":  # a developer's edit since the install: said, and the sources run
        assert compiled.state.endswith("changed since it was compiled"), compiled.state
    else:
        import kubesched.scheduler.framework.runtime as runtime

        assert Path(runtime.__file__).suffix in (".so", ".pyd")


def test_the_switch_loads_every_compiled_module_from_its_source() -> None:
    code = (
        "import importlib, kubesched.compiled as c; print(c.state); "
        "print(all(importlib.import_module(m).__file__.endswith('.py') for m in c.MODULES))"
    )
    done = subprocess.run([sys.executable, "-c", code], env=pure_env(), capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[1] == "True"
    assert lines[0] in ("pure Python: KUBESCHED_PURE_PYTHON is set", "pure Python: not compiled")
    version = subprocess.run([*KUBESCHED, "--version"], env=pure_env(), capture_output=True, text=True, check=True)
    assert version.stdout == f"kubesched, version {kubesched.__version__} ({lines[0]})\n"


def test_an_edited_source_is_named() -> None:
    digests = {m: hashlib.sha256(compiled._source(m).read_bytes()).hexdigest() for m in compiled.MODULES}
    assert compiled.edited(digests) == []
    digests["kubesched.scheduler.nodetable"] = "0" * 64
    assert compiled.edited(digests) == ["kubesched.scheduler.nodetable"]
    del digests["kubesched.api.pod"]
    assert compiled.edited(digests) == ["kubesched.api.pod", "kubesched.scheduler.nodetable"]


def test_both_paths_place_the_same_pods_with_the_same_messages(tmp_path: Path) -> None:
    args = [*KUBESCHED, "simulate", str(ROOT / "examples" / "preemption"), "--output", "json"]
    here = subprocess.run(args, capture_output=True, text=True, timeout=120)
    pure = subprocess.run(args, capture_output=True, text=True, timeout=120, env=pure_env())
    assert here.returncode == pure.returncode == 0, (here.stderr, pure.stderr)
    assert here.stdout == pure.stdout


def test_the_scheduler_core_tests_pass_on_the_pure_python_path() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-x", *CORE],
        cwd=ROOT,
        env=pure_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-4000:]
