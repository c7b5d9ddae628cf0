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


@pytest.mark.parametrize("claims", ["empty", "half"])
def test_the_dra_steady_state_runs_with_claims_allocated_up_front(claims: str) -> None:
    """The DRA workloads that allocate claims before the window (upstream's allocResourceClaims op)
    reach into the allocator and the device table, which an import alone does not call: a name
    moved between them broke the benchmark table's DRA rows unseen once. Ten nodes, half a second."""
    import json
    import subprocess

    workload = [str(BENCHMARKS / "scheduler_perf_dra.py"), "SteadyStateClusterResourceClaimTemplate"]
    out = subprocess.run(
        [sys.executable, *workload, "--claims", claims, "--nodes", "10", "--duration", "0.5"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["nodes"] == 10 and result["pods"] > 0
