"""``kubesched diff``: two simulations' pods (moved, gone pending, placed) and two replays' curves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpu_trace import write_nodes, write_pods
from helpers import make_node, make_pod

KUBESCHED = [sys.executable, "-m", "kubesched"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KUBESCHED, *args], capture_output=True, text=True, timeout=300)


def simulate(tmp: Path, name: str, objs: list[dict], config: dict | None = None) -> Path:
    src = tmp / f"{name}.yaml"
    docs = [{"apiVersion": "v1", **o} for o in objs]
    if config:
        docs.append(config)
    src.write_text(yaml.safe_dump_all(docs))
    r = run("simulate", str(src), "-o", "json")
    assert r.returncode == 0, r.stderr
    out = tmp / f"{name}.json"
    out.write_text(r.stdout)
    return out


def test_pods_moved_pending_and_placed(tmp_path: Path) -> None:
    pods = [make_pod("small", cpu="1"), make_pod("big", cpu="3"), make_pod("late", cpu="3")]
    a = simulate(tmp_path, "a", [make_node("n1", cpu="4"), make_node("n2", cpu="4"), *pods])
    # B: n2 is gone and n3 is small: "small" moves to n3, "big" keeps n1, "late" no longer fits
    b = simulate(tmp_path, "b", [make_node("n1", cpu="4"), make_node("n3", cpu="1"), *pods])
    r = run("diff", str(a), str(b), "-o", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    before = {p["name"]: p["nodeName"] for p in json.loads(a.read_text())["pods"]}
    after = {p["name"]: p["nodeName"] for p in json.loads(b.read_text())["pods"]}
    moved = {m["pod"]: (m["from"], m["to"]) for m in d["moved"]}
    pending = {m["pod"]: m for m in d["wentPending"]}
    for name in before:
        key = f"default/{name}"
        if before[name] and after[name] and before[name] != after[name]:
            assert moved[key] == (before[name], after[name])
        elif before[name] and not after[name]:
            assert "Insufficient cpu" in pending[key]["message"]
    assert pending and d["unchanged"] + len(d["moved"]) + len(d["wentPending"]) + len(d["gotPlaced"]) == 3
    text = run("diff", str(a), str(b))
    assert text.returncode == 0 and "went pending: 1" in text.stdout


def test_replay_curves_side_by_side(tmp_path: Path) -> None:
    pytest.importorskip("kubesched_gpushare", reason="the plugins/gpushare package is not installed")
    nodes, pods = write_nodes(tmp_path / "n.csv"), write_pods(tmp_path / "p.csv", n=120, seed=4)
    outs = []
    for policy in ("BestFit", "FGD"):
        r = run("replay", str(pods), "--cluster", str(nodes), "--mode", "arrivals", "--policy", policy, "-o", "json")
        assert r.returncode == 0, r.stderr
        path = tmp_path / f"{policy}.json"
        path.write_text(r.stdout)
        outs.append(json.loads(r.stdout))
    r = run("diff", str(tmp_path / "BestFit.json"), str(tmp_path / "FGD.json"), "-o", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    a = {pt["arrivedPct"]: pt for pt in outs[0]["curve"]}
    b = {pt["arrivedPct"]: pt for pt in outs[1]["curve"]}
    assert [pt["arrivedPct"] for pt in d["curve"]] == sorted(a.keys() & b.keys())
    for pt in d["curve"]:
        x = pt["arrivedPct"]
        al = pt["allocatedPct"]
        assert (al["a"], al["b"]) == (a[x]["allocatedPct"], b[x]["allocatedPct"])
        assert al["delta"] == pytest.approx(b[x]["allocatedPct"] - a[x]["allocatedPct"], abs=1e-3)
    text = run("diff", str(tmp_path / "BestFit.json"), str(tmp_path / "FGD.json"))
    assert text.returncode == 0 and text.stdout.startswith("ARRIVED %")
    # the table: every tenth percent, A, B and Δ of allocation then of fragmentation
    lines = [line.split() for line in text.stdout.splitlines()]
    assert lines[0] == ["ARRIVED", "%", "ALLOCATED", "%", "A", "B", "Δ", "FRAGMENTED", "%", "A", "B", "Δ"]
    by = {pt["arrivedPct"]: pt for pt in d["curve"]}
    assert [int(r[0]) for r in lines[1:]] == [x for x in sorted(by) if x % 10 == 0]
    for r in lines[1:]:
        pt = by[int(r[0])]
        al, fr = pt["allocatedPct"], pt["fragmentationPct"]
        assert r[1:] == [f"{v:.2f}" for v in (al["a"], al["b"], al["delta"], fr["a"], fr["b"], fr["delta"])]


def test_bad_inputs_are_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    r = run("diff", str(junk), str(other))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not JSON" in r.stderr
    r = run("diff", str(other), str(other))
    assert r.returncode == 2 and "not the JSON of kubesched simulate -o json or replay -o json" in r.stderr
