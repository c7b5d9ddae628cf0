"""The floors the benchmark table quotes are upstream's: each row names the workload of
kube-scheduler v1.37.2's ``test/integration/scheduler_perf/*/performance-config.yaml`` whose
``threshold`` it is (read from the Go module cache that ``scripts/build_upstream.sh`` fills), and the
DRA script's floors are the same numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from tests.upstream import binaries

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import scheduler_perf_dra  # noqa: E402
import table  # noqa: E402

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser: upstream's files are large


def upstream_thresholds() -> dict[str, Any]:
    binaries()  # the module cache holds k8s.io/kubernetes once the build has run
    cache = subprocess.run(["go", "env", "GOMODCACHE"], check=True, capture_output=True, text=True).stdout.strip()
    root = Path(cache) / "k8s.io" / "kubernetes@v1.37.2" / "test" / "integration" / "scheduler_perf"
    out: dict[str, Any] = {}
    for path in root.rglob("performance-config.yaml"):  # podgroup/gangscheduling/... too
        for case in yaml.load(path.read_text(), Loader=LOADER) or []:
            for workload in case.get("workloads") or []:
                threshold = workload.get("threshold")
                out[f"{case['name']}/{workload['name']}"] = (
                    threshold.get("dra") if isinstance(threshold, dict) else threshold
                )
    return out


def test_every_floor_is_upstreams_threshold() -> None:
    thresholds = upstream_thresholds()
    for row in table.ROWS:
        if row.upstream is None:
            assert row.floor is None, row.workload
            continue
        assert row.upstream in thresholds, row.upstream
        assert row.floor == thresholds[row.upstream], row.upstream
    dra = {r.upstream: r.floor for r in table.ROWS if r.script == "scheduler_perf_dra.py"}
    script = {
        "SchedulingWithResourceClaimTemplate/5000pods_500nodes": scheduler_perf_dra.FLOORS[
            ("SchedulingWithResourceClaimTemplate", "full")
        ],
        **{
            f"SchedulingWithResourceClaimTemplate/{v}_500nodes": scheduler_perf_dra.FLOORS[
                ("SteadyStateClusterResourceClaimTemplate", v)
            ]
            for v in ("empty", "half", "full")
        },
        **{
            f"{workload}/{variant}": floor
            for (workload, variant), floor in scheduler_perf_dra.FLOORS.items()
            if workload == "ExtendedResource"
        },
    }
    assert {k: v for k, v in dra.items() if v is not None} == script


def test_side_by_side_finds_every_rows_upstream_directory() -> None:
    """``benchmarks/side_by_side.py`` builds and runs the scheduler_perf directory that defines each
    row's upstream test case: every row's case is found, in the directory its floor came from."""
    import side_by_side

    binaries()
    tree = side_by_side.upstream_tree()
    found = {r.upstream: side_by_side.directory_of(r.upstream.split("/", 1)[0], tree) for r in table.ROWS if r.upstream}
    assert None not in found.values(), [k for k, v in found.items() if v is None]
    assert found["SchedulingBasic/5000Nodes_10000Pods"] == "misc"
    assert found["GangScheduling/5000Nodes_1000Gangs_3000Pods"] == "podgroup/gangscheduling"
    assert found["ConsumableCapacity/empty_500nodes"] == "dra/consumablecapacity"
