"""benchmarks/like_for_like.py's two sides do the same work: on one small mixed workload file,
kube-scheduler v1.37.2's scheduler (upstream/cmd/schedperf) and kubesched's each bind every measured
pod and report a window with its CPU time. The figures themselves are the benchmark's, never a
test's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from upstream import binaries

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import like_for_like  # noqa: E402


@pytest.fixture(scope="module")
def workload_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("like") / "mixed.json"
    path.write_text(json.dumps(like_for_like.workload("mixed", 20, 10, 60)))
    return path


def test_the_workload_interleaves_its_templates_and_binds_its_init_pods() -> None:
    w = like_for_like.workload("mixed", 4, 8, 10)
    nodes = [o for o in w["objects"] if o["kind"] == "Node"]
    init = [o for o in w["objects"] if o["kind"] == "Pod"]
    assert len(nodes) == 4 and [p["spec"]["nodeName"] for p in init] == [f"node-{i % 4}" for i in range(8)]
    measured = w["measured"]
    assert [p["metadata"]["name"] for p in measured] == [f"measured-{i}" for i in range(10)]
    # five templates, one after the other: plain, node affinity, spread, anti-affinity, larger
    assert "affinity" not in measured[0]["spec"] and "nodeAffinity" in measured[1]["spec"]["affinity"]
    assert measured[2]["spec"]["topologySpreadConstraints"] and "podAntiAffinity" in measured[3]["spec"]["affinity"]
    assert measured[4]["spec"]["nodeSelector"] and measured[5]["spec"] == measured[0]["spec"]


@pytest.mark.parametrize("side", ["upstream", "kubesched"])
def test_each_side_binds_every_measured_pod_in_its_window(side: str, workload_file: Path) -> None:
    cmd = (
        [str(binaries() / "schedperf"), str(workload_file)]
        if side == "upstream"
        else [sys.executable, str(BENCHMARKS / "like_for_like.py"), "--side", "kubesched", str(workload_file)]
    )
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["pods"] == 60 and report["bound"] == 60, report
    assert report["seconds"] > 0 and report["cpu_seconds"] > 0
    assert report["cpu_ms_per_pod"] == pytest.approx(1000 * report["cpu_seconds"] / 60)


@pytest.mark.parametrize("side", ["upstream", "kubesched"])
def test_each_side_preempts_for_every_pod_of_a_preempting_gang(side: str, tmp_path: Path) -> None:
    """Ten nodes full of low-priority pods and a gang of ten that fits only by evicting them: each
    side binds the whole gang (upstream's through schedperf giving the pods their PriorityClass's
    value, as admission would; without it they would have none and preempt nothing)."""
    path = tmp_path / "gangpreempt.json"
    w = like_for_like.workload("gangpreempt", 10, 100, 10)
    assert w["objects"][0]["kind"] == "PriorityClass" and "priority" not in w["measured"][0]["spec"]
    path.write_text(json.dumps(w))
    cmd = (
        [str(binaries() / "schedperf"), "--feature-gates", w["feature_gates"], str(path)]
        if side == "upstream"
        else [sys.executable, str(BENCHMARKS / "like_for_like.py"), "--side", "kubesched", str(path)]
    )
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["pods"] == 10 and report["bound"] == 10, report


def test_a_workload_that_does_not_decode_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"objects": [{"kind": "Nope", "apiVersion": "v9"}], "measured": []}))
    out = subprocess.run([str(binaries() / "schedperf"), str(bad)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stderr.startswith(f"schedperf: {bad}: object 0: "), out.stderr


def test_the_readme_headline_is_read_from_the_table() -> None:
    """Ahead means ahead on both CPU per pod and pods/s; the ranges are over every row."""
    text = "\n".join(
        [
            "| row | nodes | pods measured (after bound) | kube-scheduler pods/s | kubesched pods/s | "
            "kube-scheduler CPU ms/pod | kubesched CPU ms/pod | CPU ratio |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
            "| basic-10 | 10 | 5,000 (20) | 4,000 | 6,000 | 0.300 | 0.150 | 2.0x |",
            "| mixed-15000 | 15,000 | 10,000 (1,000) | 100 | 80 | 10.000 | 1.000 | 10.0x |",
        ]
    )
    line = like_for_like.headline(text)
    assert "ahead on 1 of 2 rows from 10 to 15,000 nodes" in line
    assert "2.0× to 10.0× less CPU per pod and 0.8× to 1.5× the pods/s" in line


def test_the_readme_shows_its_rows_and_always_the_lowest_ratio() -> None:
    rows = [("basic-10", "2.4"), ("basic-500", "1.1"), ("basic-15000", "33.3"), ("mixed-100", "4.3")]
    text = "\n".join(
        ["Measured ...", "", "| row | nodes | p | a | b | c | d | CPU ratio |", "|---|---|---|---|---|---|---|---|"]
        + [f"| {name} | 10 | 5,000 (20) | 2 | 3 | 0.5 | 0.1 | {ratio}x |" for name, ratio in rows]
    )
    block = like_for_like.readme_block(text)
    assert block.startswith("Like for like, ") and "Measured" not in block
    shown = [line.split("|")[1].strip() for line in block.splitlines()[4:]]
    assert shown == ["basic-10", "basic-500", "basic-15000"]  # mixed-100 is not a README row, basic-500 the lowest


def test_the_trace_row_leaves_out_pods_of_a_whole_nodes_size() -> None:
    big = {"spec": {"containers": [{"resources": {"requests": {"cpu": "120000m"}}}]}}
    small = {"spec": {"containers": [{"resources": {"requests": {"cpu": "64000m"}}}]}}
    assert like_for_like._whole_node(big) and not like_for_like._whole_node(small)
