"""Every benchmark script still imports: they are run by hand, not by the test command, so a name
moved inside kubesched would otherwise break one unseen (``scheduler_perf.py`` did once)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("name", sorted(p.stem for p in BENCHMARKS.glob("*.py")))
def test_the_benchmark_imports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = importlib.import_module(name)
    assert module.__doc__  # each says what it measures
    sys.modules.pop(name, None)
