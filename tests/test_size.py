"""``kubesched size``: the count it returns leaves no pod pending and one fewer leaves one, checked
against a brute force over every count on small random workloads, and the command's output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_trace import POD_HEADER
from helpers import make_node, make_pod
from kubesched.cluster.loader import Manifest
from kubesched.planning.size import Template, load, run_trial, size
from kubesched.scheduler.config import default_config

KUBESCHED = [sys.executable, "-m", "kubesched"]

CPUS = ["100m", "500m", "1", "1500m", "2", "3"]
MEMORIES = ["256Mi", "1Gi", "4Gi", "7Gi"]
pods_st = st.lists(
    st.tuples(st.sampled_from(CPUS), st.sampled_from(MEMORIES)),
    min_size=1,
    max_size=10,
)


def manifests(objs: list[dict]) -> list[Manifest]:
    return [Manifest({"apiVersion": "v1", **o}, "<test>", i) for i, o in enumerate(objs)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pods=pods_st,
    node_cpu=st.sampled_from(["2", "4"]),
    node_mem=st.sampled_from(["4Gi", "8Gi"]),
    existing=st.integers(0, 1),
)
def test_the_count_is_the_boundary_a_brute_force_finds(pods, node_cpu, node_mem, existing) -> None:
    objects = manifests(
        [make_node(f"old-{i}", cpu="1", memory="2Gi") for i in range(existing)]
        + [make_pod(f"p{i}", cpu=c, memory=m) for i, (c, m) in enumerate(pods)]
    )
    template = Template(make_node("tpl", cpu=node_cpu, memory=node_mem), 1.0)
    config = default_config()
    limit = len(pods) + 1
    result = size(objects, template, config, max_nodes=limit)
    brute = [run_trial(objects, template, n, config, cut_short=False).fits for n in range(limit + 1)]
    placeable = [
        (c, m)
        for c, m in pods
        if float(c.rstrip("m")) / (1000 if c.endswith("m") else 1) <= float(node_cpu)
        and int(m.rstrip("GiM")) * (1024 if m.endswith("Gi") else 1) <= int(node_mem.rstrip("Gi")) * 1024
    ]
    if len(placeable) < len(pods):  # some pod fits on no template node: set apart, the rest sized
        assert result.unfixable
    else:
        assert not result.unfixable
        n = result.nodes
        assert n is not None and brute[n]
        assert n == 0 or not brute[n - 1]
        if all(brute[i] <= brute[i + 1] for i in range(limit)):  # more nodes never hurt here
            assert n == brute.index(True)
        # cut short or not, a trial's verdict is the same
        for t in result.trials:
            assert t.fits == brute[t.count] or t.count > limit


def _write_pods(path: Path, pods: list[dict]) -> None:
    path.write_text(yaml.safe_dump_all([{"apiVersion": "v1", **p} for p in pods]))


def test_the_command(tmp_path: Path) -> None:
    tpl = tmp_path / "tpl.yaml"
    tpl.write_text(yaml.safe_dump({"apiVersion": "v1", **make_node("m5-xlarge", cpu="4", memory="16Gi")}))
    big = tmp_path / "big.yaml"
    big.write_text(yaml.safe_dump({"apiVersion": "v1", **make_node("m5-2xlarge", cpu="8", memory="32Gi")}))
    work = tmp_path / "w.yaml"
    _write_pods(work, [make_pod(f"web-{i}", cpu="900m", memory="2Gi", ns="shop") for i in range(23)])
    args = ["size", str(work), "--node-template", f"{tpl}:0.192", "--node-template", f"{big}:0.5", "--max-nodes", "40"]
    r = subprocess.run([*KUBESCHED, *args, "-o", "json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    by = {o["template"]: o for o in doc["options"]}
    # 4 web pods of 900m fit a 4-cpu node: 23 need 6; 8 fit an 8-cpu node: 3
    assert by["m5-xlarge"]["nodes"] == 6 and by["m5-2xlarge"]["nodes"] == 3
    assert (doc["nodes"], doc["template"]) == (6, "m5-xlarge")  # 6 × 0.192 < 3 × 0.5
    assert (doc["cost"], by["m5-xlarge"]["cost"]) == (1.152, 1.152)  # not 1.1520000000000001
    assert '"cost": 1.152,' in r.stdout
    short = by["m5-xlarge"]["pendingWithOneFewer"]
    assert len(short) == 3 and all("Insufficient cpu" in p["message"] for p in short)
    assert by["m5-xlarge"]["unplaceable"] == []
    text = subprocess.run(
        [*KUBESCHED, "size", str(work), "--node-template", str(tpl), "--max-nodes", "40"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        text.returncode == 0 and text.stdout.splitlines()[0] == "m5-xlarge: 6 node(s) leave no pod pending (8 trials)"
    )
    bad = subprocess.run(
        [*KUBESCHED, "size", str(work), "--node-template", f"{tpl}:cheap"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and bad.stderr.strip().endswith("the cost after ':' is not a number: 'cheap'")


def test_a_pod_no_count_places_is_named_with_its_own_cause(tmp_path: Path) -> None:
    """An 8-GPU pod against a 4-GPU template and a pod whose selector no template node matches:
    the answer is none (exit 1), each pod named with what it asks beyond one node or its message
    alone on one node, not a crowded trial's reasons; the other pods are still sized."""
    tpl = tmp_path / "gpu4.yaml"
    node = make_node("gpu4", cpu="32", memory="128Gi", extra={"nvidia.com/gpu": "4"})
    tpl.write_text(yaml.safe_dump({"apiVersion": "v1", **node}))
    gpu = {"nvidia.com/gpu": "8"}
    pods = [make_pod(f"fill-{i}", cpu="30", memory="8Gi") for i in range(3)]
    pods.append(make_pod("big", cpu="4", memory="200Gi", extra=gpu))
    pods[-1]["spec"]["containers"][0]["resources"]["limits"] = gpu
    pods.append(make_pod("picky", cpu="100m", spec={"nodeSelector": {"disk": "ssd"}}))
    work = tmp_path / "w.yaml"
    _write_pods(work, pods)
    args = [*KUBESCHED, "size", str(work), "--node-template", str(tpl), "--max-nodes", "20"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "gpu4: none: 2 pod(s) fit on no number of gpu4 nodes (7 trials)"
    assert (
        lines[1]
        == "  default/big: memory: asks 200Gi, a gpu4 node has 128Gi; nvidia.com/gpu: asks 8, a gpu4 node has 4"
    )
    assert lines[2] == (
        "  default/picky: alone on one gpu4 node: 0/1 nodes are available: 1 node(s) didn't match Pod's node "
        "affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert lines[3:] == ["  the other pods need 3 node(s)", "no template places every pod"]
    assert "0 node(s)" not in r.stdout and "Insufficient cpu" not in r.stdout
    doc = json.loads(subprocess.run([*args, "-o", "json"], capture_output=True, text=True, timeout=120).stdout)
    (option,) = doc["options"]
    assert (doc["nodes"], option["nodes"], option["nodesForTheRest"], option["cost"]) == (None, None, 3, None)
    assert [t["setApart"] for t in option["trials"]][:2] == [True, False]


def test_the_report_charts_the_search_in_node_order(tmp_path: Path) -> None:
    from kubesched.report.size import _trials_figure

    figure = _trials_figure(
        [
            {
                "template": "t",
                "trials": [
                    {"nodes": 20, "fits": False, "setApart": True},
                    {"nodes": 20, "fits": True},
                    {"nodes": 0, "fits": False},
                    {"nodes": 4, "fits": True},
                    {"nodes": 2, "fits": False},
                    {"nodes": 3, "fits": True},
                ],
            }
        ]
    )
    (trace,) = figure.data
    assert list(trace.x) == ["0", "2", "3", "4", "20"] and list(trace.y) == [0, 0, 1, 1, 1]  # ordered categories
    assert trace.mode == "markers"
    assert list(trace.marker.symbol) == ["circle-open", "circle-open", "circle", "circle", "circle"]


def test_sizing_from_the_trace_csvs(tmp_path: Path) -> None:
    """A trace's pod CSV against a one-row node CSV: the pods' GPUs count (replay's default
    policy), a brute force over counts agrees, and a pod asking for another GPU model is set apart."""
    pytest.importorskip("kubesched_gpushare", reason="the plugins/gpushare package is not installed")
    tpl = tmp_path / "t4.csv"
    tpl.write_text("sn,cpu_milli,memory_mib,gpu,model\nt4,64000,262144,2,T4\n")
    pods = tmp_path / "pods.csv"
    rows = [f"full-{i},1000,1024,1,1000,,LS,Running,0,,0" for i in range(3)]
    rows += ["half,1000,1024,1,500,,LS,Running,0,,0", "cpu-only,2000,2048,0,0,,LS,Running,0,,0"]
    rows += ["picky,1000,1024,1,1000,V100M16,LS,Running,0,,0"]
    pods.write_text(",".join(POD_HEADER) + "\n" + "\n".join(rows) + "\n")
    objects, (template,), config = load([str(pods)], [], [str(tpl)])
    assert "GpuShare" in [p.name for p in config.profiles[0].multi_point.enabled]
    result = size(objects, template, config, max_nodes=5)
    # 3.5 GPUs on 2-GPU nodes: 2 nodes; "picky" wants a V100M16 no T4 node has
    assert result.nodes == 2
    assert [p["name"] for p in result.unfixable] == ["picky"]
    placeable = [m for m in objects if m.kind != "Pod" or m.obj["metadata"]["name"] != "picky"]
    brute = [run_trial(placeable, template, n, config, cut_short=False).fits for n in range(4)]
    assert brute == [False, False, True, True]
    assert result.short_of is not None and len(result.short_of.pending) == 2
    r = subprocess.run(
        [*KUBESCHED, "size", str(pods), "--node-template", f"{tpl}:2", "--max-nodes", "5", "--policy", "BestFit"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 1, r.stderr  # picky's model is on no T4 node
    assert r.stdout.splitlines()[:3] == [
        "t4: none: 1 pod(s) fit on no number of t4 nodes (5 trials)",
        "  openb/picky: alone on one t4 node: 0/1 nodes are available: 1 node(s) didn't have the requested GPU "
        "model. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        "  the other pods need 2 node(s)",
    ]
